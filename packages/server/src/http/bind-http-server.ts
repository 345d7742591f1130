/**
 * The server's listening socket, bound before anything else starts: a server that cannot have
 * its port fails before it touches the database. Until the API is ready, requests get 503.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ServerStartError } from '../server-start-error.js';
import { closeHttpServer } from './close-http-server.js';
import type { HttpHandler } from './http-handler.js';

export interface BoundHttpServer {
  readonly server: Server;
  /** The port bound: the one asked for, or the one the system chose for 0. */
  readonly port: number;
  /** Hands requests and upgrades to `handler` from now on. */
  serve(handler: HttpHandler): void;
  /** Stops listening: through `closeHttpServer` once serving, at once before. Idempotent. */
  close(): Promise<void>;
}

const STARTING_BODY = JSON.stringify({
  detail: [{ msg: 'The server is starting', code: 'service_unavailable' }],
});

function answerStarting(_request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
  response.end(STARTING_BODY);
}

function refuseUpgradeWhileStarting(_request: IncomingMessage, socket: Duplex): void {
  socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
}

/** The one line a user reads when the port cannot be had. */
function bindError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `port ${port} on ${host}`;
  const messages: Record<string, string> = {
    EADDRINUSE: `${where} is in use (EADDRINUSE)`,
    EACCES: `${where} needs privileges this process does not have (EACCES)`,
    EADDRNOTAVAIL: `${host} is not an address of this machine (EADDRNOTAVAIL)`,
    ENOTFOUND: `${host} is not a known host name (ENOTFOUND)`,
    EAI_AGAIN: `${host} could not be resolved (EAI_AGAIN)`,
  };
  const message = (error.code && messages[error.code]) ?? `cannot listen on ${where}: ${error.message}`;
  return new ServerStartError(message, { cause: error });
}

export async function bindHttpServer(host: string, port: number): Promise<BoundHttpServer> {
  let handler: HttpHandler | null = null;
  const server = createServer((request, response) =>
    handler ? handler(request, response) : answerStarting(request, response),
  );
  server.on('upgrade', (request, socket, head) =>
    handler ? handler.upgrade(request, socket, head) : refuseUpgradeWhileStarting(request, socket),
  );
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => reject(bindError(error, host, port));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  const address = server.address();
  let closing: Promise<void> | null = null;
  return {
    server,
    port: typeof address === 'object' && address ? address.port : port,
    serve(ready) {
      handler = ready;
    },
    close() {
      closing ??= handler
        ? closeHttpServer(server, handler)
        : new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          });
      return closing;
    },
  };
}
