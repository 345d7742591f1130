/**
 * The gateway agent (dstack's gateway: nginx + the gateway app, in one process): a management API
 * on loopback where the server sends the state to serve, and the public side: HTTPS at
 * `https://{run}.{domain}` with the certificate the server sent, and plain HTTP that redirects
 * there (or serves, when there is no certificate or the service says `https: false`). The state
 * is stored on disk and loaded at start, so the gateway serves with no server. Requests pass the
 * services' rate limits and are counted for the server's autoscaler (gateway-admission.ts).
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type GatewayState, GatewayStateSchema } from '@dstack/core/agent-protocol';
import { VERSION } from '../version.js';
import { answerRefusal, closeSignal, GatewayAdmission, refuseUpgrade } from './gateway-admission.js';
import { answerJson, forwardRequest, forwardUpgrade } from './gateway-forward.js';
import { GatewayRouting } from './gateway-routing.js';
import { GatewayStateStore } from './gateway-state-store.js';

export interface GatewayOptions {
  /** Where the state is kept (`state.json`). Required. */
  home: string;
  /** The management API's port on `apiHost`. Default `DSTACK_GATEWAY_API_PORT`. */
  apiPort: number;
  /** Default 127.0.0.1: the server reaches it through SSH. */
  apiHost?: string;
  /** Public HTTPS and HTTP ports (0: any free port, for tests). */
  httpsPort: number;
  httpPort: number;
  /** Where the public ports listen. Default every address. */
  publicHost?: string;
  /** How long a request to a service scaled to zero waits for a replica. Default `SCALE_FROM_ZERO_WAIT_MS`. */
  scaleFromZeroWaitMs?: number;
}

export interface GatewayServer {
  readonly apiPort: number;
  readonly httpPort: number;
  /** The HTTPS port; null while there is no certificate. */
  readonly httpsPort: number | null;
  close(): Promise<void>;
}

const MAX_STATE_BYTES = 16 * 1024 * 1024;

function listen(server: Server | HttpsServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_STATE_BYTES) {
        reject(new Error(`the state is over ${MAX_STATE_BYTES} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export async function startGateway(options: GatewayOptions): Promise<GatewayServer> {
  const store = new GatewayStateStore(options.home);
  const routing = new GatewayRouting();
  let state = await store.load();
  routing.update(state);
  const admission = new GatewayAdmission(
    (hostname) => routing.serviceFor(hostname),
    options.scaleFromZeroWaitMs,
  );
  const publicHost = options.publicHost ?? '0.0.0.0';
  let https: HttpsServer | null = null;
  let httpsPort: number | null = null;

  const servePublic =
    (protocol: 'http' | 'https') => async (request: IncomingMessage, response: ServerResponse) => {
      const service = routing.serviceFor(request.headers.host);
      if (!service) {
        answerJson(response, 404, `No service at ${request.headers.host ?? '(no Host)'} on this gateway`);
        return;
      }
      if (protocol === 'http' && service.https && state.certificate !== null) {
        response.writeHead(301, { location: `https://${service.hostname}${request.url ?? '/'}` });
        response.end();
        return;
      }
      const refusal = routing.refusal(service, request.headers.authorization);
      if (refusal) {
        answerJson(response, refusal.status, refusal.message);
        return;
      }
      const admitted = await admission.admit(service, request, closeSignal(response));
      if ('refusal' in admitted) {
        answerRefusal(response, admitted.refusal);
        return;
      }
      const replicas = routing.replicaOrder(admitted.service);
      const replicasNow = () =>
        routing.replicaOrder(routing.serviceFor(service.hostname) ?? admitted.service);
      forwardRequest(request, response, { replicas, replicasNow, dropAuthorization: service.auth, protocol });
    };
  const upgradePublic =
    (protocol: 'http' | 'https') => async (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const service = routing.serviceFor(request.headers.host);
      const refusal = service ? routing.refusal(service, request.headers.authorization) : null;
      if (!service || refusal) {
        socket.end(`HTTP/1.1 ${service ? 403 : 404} Refused\r\ncontent-length: 0\r\n\r\n`);
        return;
      }
      const admitted = await admission.admit(service, request, closeSignal(socket));
      if ('refusal' in admitted) {
        refuseUpgrade(socket, admitted.refusal);
        return;
      }
      forwardUpgrade(request, socket, head, {
        replicas: routing.replicaOrder(admitted.service),
        dropAuthorization: service.auth,
        protocol,
      });
    };

  /** Serves HTTPS with the state's certificate: starts, renews or stops the HTTPS server. */
  const applyCertificate = async (next: GatewayState['certificate']): Promise<void> => {
    if (next === null) {
      if (https) await new Promise<void>((resolve) => https?.close(() => resolve()));
      https = null;
      httpsPort = null;
      return;
    }
    const secure = { cert: next.certificate, key: next.private_key };
    if (https) {
      https.setSecureContext(secure);
      return;
    }
    const created = createHttpsServer(secure, servePublic('https'));
    created.on('upgrade', upgradePublic('https'));
    httpsPort = await listen(created, options.httpsPort, publicHost);
    https = created;
  };

  const api = createHttpServer(async (request, response) => {
    try {
      if (request.method === 'GET' && request.url === '/api/healthcheck') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ service: 'dstack-gateway', version: VERSION, services: routing.serviceCount }),
        );
        return;
      }
      if (request.method === 'PUT' && request.url === '/api/state') {
        const parsed = GatewayStateSchema.safeParse(JSON.parse(await readBody(request)));
        if (!parsed.success) {
          answerJson(response, 400, `Bad state: ${parsed.error.message}`);
          return;
        }
        // The certificate is tried before anything is stored: a bad one leaves the old state serving.
        await applyCertificate(parsed.data.certificate);
        await store.save(parsed.data);
        state = parsed.data;
        routing.update(state);
        admission.stateChanged();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{}');
        return;
      }
      if (request.method === 'GET' && request.url === '/api/stats/collect') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(admission.stats.report()));
        return;
      }
      answerJson(response, 404, `Not found: ${request.method} ${request.url}`);
    } catch (error) {
      answerJson(response, 400, error instanceof Error ? error.message : String(error));
    }
  });
  const http = createHttpServer(servePublic('http'));
  http.on('upgrade', upgradePublic('http'));

  await applyCertificate(state.certificate);
  const apiPort = await listen(api, options.apiPort, options.apiHost ?? '127.0.0.1');
  const httpPort = await listen(http, options.httpPort, publicHost);
  return {
    apiPort,
    httpPort,
    get httpsPort() {
      return httpsPort;
    },
    async close() {
      const servers: Array<Server | HttpsServer> = [api, http, ...(https ? [https] : [])];
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}
