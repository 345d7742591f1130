/**
 * The gateway agent (dstack's gateway: nginx + the gateway app, in one process): a management API
 * on loopback where the server sends the state to serve (every request must carry the gateway's
 * agent token, which only the server holds), and the public side: HTTPS at
 * `https://{run}.{domain}` with the certificate the server sent or the one obtained from the ACME
 * server for that name (http-01 answered on port 80), and plain HTTP that redirects there (or
 * serves, when the service says `https: false`). The state is stored on disk and loaded at
 * start, so the gateway serves with no server. Requests pass the services' rate limits and are
 * counted for the server's autoscaler (gateway-admission.ts). The public side passes on only
 * origin-form request targets (a path), to the service's replicas and nowhere else: anything
 * else, a CONNECT included, is answered 400 before the service is even looked up.
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
import { createSecureContext, type SecureContext } from 'node:tls';
import {
  type GatewayHealth,
  type GatewayState,
  GatewayStateSchema,
  hasAgentToken,
  requestTargetRefusal,
} from '@dstack/core/agent-protocol';
import { VERSION } from '../version.js';
import { GatewayAcmeCertificates } from './acme/acme-certificates.js';
import { answerRefusal, closeSignal, GatewayAdmission, refuseUpgrade } from './gateway-admission.js';
import { answerJson, forwardRequest, forwardUpgrade } from './gateway-forward.js';
import { GatewayRouting } from './gateway-routing.js';
import { GatewayStateStore } from './gateway-state-store.js';

export interface GatewayOptions {
  /** Where the state is kept (`state.json`). Required. */
  home: string;
  /**
   * The gateway's agent token: the management API answers only requests that carry it
   * (`Authorization: Bearer <token>`). Required; `dstack-gateway` reads it from `--token-file` or
   * `DSTACK_GATEWAY_TOKEN`.
   */
  apiToken: string;
  /** The management API's port on 127.0.0.1 (the server reaches it through SSH). Default `DSTACK_GATEWAY_API_PORT`. */
  apiPort: number;
  /** Public HTTPS and HTTP ports (0: any free port, for tests). */
  httpsPort: number;
  httpPort: number;
  /** Where the public ports listen. Default every address. */
  publicHost?: string;
  /** How long a request to a service scaled to zero waits for a replica. Default `SCALE_FROM_ZERO_WAIT_MS`. */
  scaleFromZeroWaitMs?: number;
  /** Where the agent logs (certificates obtained or not). Default stderr. */
  log?: (line: string) => void;
}

export interface GatewayServer {
  readonly apiPort: number;
  readonly httpPort: number;
  /** The HTTPS port; null while there is neither a certificate nor an ACME server. */
  readonly httpsPort: number | null;
  close(): Promise<void>;
}

const MAX_STATE_BYTES = 16 * 1024 * 1024;
/** The management API listens on loopback only: the server reaches it through its SSH tunnel. */
const API_HOST = '127.0.0.1';
const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';

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

/**
 * The management API's answer to a request without the agent token (401) or with another (403);
 * null when it carries the token.
 */
function managementRefusal(
  request: IncomingMessage,
  token: string,
): { status: number; message: string } | null {
  if (hasAgentToken(request, token)) return null;
  return request.headers.authorization === undefined
    ? { status: 401, message: 'The gateway API requires its token: send "Authorization: Bearer <token>"' }
    : { status: 403, message: "The token is not this gateway's" };
}

/** The answer to a request whose target is not a path (origin-form), written on the bare socket of an upgrade or CONNECT. */
function refuseTargetOnSocket(socket: Duplex, refusal: string): void {
  const body = JSON.stringify({ detail: [{ msg: refusal }] });
  socket.end(
    `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export async function startGateway(options: GatewayOptions): Promise<GatewayServer> {
  if (!options.apiToken) throw new Error('apiToken is required: the management API answers only the server');
  const store = new GatewayStateStore(options.home);
  const routing = new GatewayRouting();
  const log =
    options.log ?? ((line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`));
  const acmeCertificates = new GatewayAcmeCertificates(options.home, log);
  await acmeCertificates.load();
  let state = await store.load();
  const applyServices = (next: GatewayState) => {
    routing.update(next);
    const httpsHostnames = next.services
      .filter((service) => service.https)
      .map((service) => service.hostname);
    acmeCertificates.update(next.acme, httpsHostnames);
  };
  applyServices(state);
  const admission = new GatewayAdmission(
    (hostname) => routing.serviceFor(hostname),
    options.scaleFromZeroWaitMs,
  );
  const publicHost = options.publicHost ?? '0.0.0.0';
  let https: HttpsServer | null = null;
  let httpsPort: number | null = null;
  /** The custom certificate's context: names without an ACME certificate of their own get it. */
  let customContext: SecureContext | null = null;

  /** An http-01 answer (any Host: the ACME server asks for the name being validated). */
  const answerChallenge = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (request.method !== 'GET' || !request.url?.startsWith(ACME_CHALLENGE_PATH)) return false;
    const keyAuthorization = acmeCertificates.challenges.get(request.url.slice(ACME_CHALLENGE_PATH.length));
    if (keyAuthorization === undefined) return false;
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    response.end(keyAuthorization);
    return true;
  };

  /** CONNECT (an authority-form target): this is no forward proxy. */
  const refuseConnect = (request: IncomingMessage, socket: Duplex) =>
    refuseTargetOnSocket(socket, requestTargetRefusal(request.url) ?? 'CONNECT is not served here');
  const servePublic =
    (protocol: 'http' | 'https') => async (request: IncomingMessage, response: ServerResponse) => {
      const targetRefusal = requestTargetRefusal(request.url);
      if (targetRefusal !== null) {
        answerJson(response, 400, targetRefusal);
        return;
      }
      if (protocol === 'http' && answerChallenge(request, response)) return;
      const service = routing.serviceFor(request.headers.host);
      if (!service) {
        answerJson(response, 404, `No service at ${request.headers.host ?? '(no Host)'} on this gateway`);
        return;
      }
      if (protocol === 'http' && service.https) {
        if (customContext || acmeCertificates.secureContextFor(service.hostname)) {
          response.writeHead(301, { location: `https://${service.hostname}${request.url ?? '/'}` });
          response.end();
          return;
        }
        if (state.acme) {
          // Served over HTTPS only, once its certificate is there: say why it is not yet.
          const status = acmeCertificates.statuses().find((entry) => entry.hostname === service.hostname);
          response.setHeader('retry-after', '10');
          answerJson(
            response,
            503,
            status?.message ?? `The certificate for ${service.hostname} is being obtained; try again shortly`,
          );
          return;
        }
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
      const dropAuthorization = !routing.passesAuthorization(service, request.headers.authorization);
      forwardRequest(request, response, {
        replicas,
        replicasNow,
        dropAuthorization,
        protocol,
        retryUntil: admitted.heldUntil,
        settled: admitted.settled,
      });
    };
  const upgradePublic =
    (protocol: 'http' | 'https') => async (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const targetRefusal = requestTargetRefusal(request.url);
      if (targetRefusal !== null) {
        refuseTargetOnSocket(socket, targetRefusal);
        return;
      }
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
        dropAuthorization: !routing.passesAuthorization(service, request.headers.authorization),
        protocol,
        settled: admitted.settled,
      });
    };

  /**
   * Serves HTTPS with the state's certificate and the ACME ones (chosen by the TLS server name):
   * starts, renews or stops the HTTPS server. A bad certificate throws before anything changes.
   */
  const applyCertificate = async (next: GatewayState): Promise<void> => {
    const custom = next.certificate
      ? { cert: next.certificate.certificate, key: next.certificate.private_key }
      : null;
    customContext = custom ? createSecureContext(custom) : null;
    if (custom === null && next.acme === null) {
      if (https) await new Promise<void>((resolve) => https?.close(() => resolve()));
      https = null;
      httpsPort = null;
      return;
    }
    if (https) {
      // The default for clients that send no server name.
      if (custom) https.setSecureContext(custom);
      return;
    }
    const created = createHttpsServer(
      {
        ...custom,
        SNICallback: (servername, callback) => {
          const context = acmeCertificates.secureContextFor(servername) ?? customContext;
          if (context) callback(null, context);
          else callback(new Error(`no certificate for ${servername} yet`));
        },
      },
      servePublic('https'),
    );
    created.on('upgrade', upgradePublic('https'));
    created.on('connect', refuseConnect);
    httpsPort = await listen(created, options.httpsPort, publicHost);
    https = created;
  };

  const api = createHttpServer(async (request, response) => {
    const refusal = managementRefusal(request, options.apiToken);
    if (refusal) {
      answerJson(response, refusal.status, refusal.message);
      return;
    }
    try {
      if (request.method === 'GET' && request.url === '/api/healthcheck') {
        response.writeHead(200, { 'content-type': 'application/json' });
        const health: GatewayHealth = {
          service: 'dstack-gateway',
          version: VERSION,
          services: routing.serviceCount,
          certificates: acmeCertificates.statuses(),
        };
        response.end(JSON.stringify(health));
        return;
      }
      if (request.method === 'PUT' && request.url === '/api/state') {
        const parsed = GatewayStateSchema.safeParse(JSON.parse(await readBody(request)));
        if (!parsed.success) {
          answerJson(response, 400, `Bad state: ${parsed.error.message}`);
          return;
        }
        // The certificate is tried before anything is stored: a bad one leaves the old state serving.
        await applyCertificate(parsed.data);
        await store.save(parsed.data);
        state = parsed.data;
        applyServices(state);
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
  http.on('connect', refuseConnect);

  await applyCertificate(state);
  const apiPort = await listen(api, options.apiPort, API_HOST);
  const httpPort = await listen(http, options.httpPort, publicHost);
  return {
    apiPort,
    httpPort,
    get httpsPort() {
      return httpsPort;
    },
    async close() {
      acmeCertificates.close();
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
