/**
 * Forwards one request (or WebSocket upgrade) from a gateway's client to a replica: the body and
 * the answer stream both ways untouched; hop-by-hop headers are dropped, `X-Forwarded-*` added,
 * and a caller's dstack token is not passed on. A bodiless request whose
 * replica refuses or drops the connection before answering goes to the next one, and when every
 * replica failed, to the service's replicas of the moment again, for a few seconds (as the server's
 * proxy does): a replica going away, one just started that does not listen yet, or a moment
 * without a ready replica loses no request. The gateway's 502 names why each replica failed.
 *
 * The request goes to the replica's host and port with the client's target as the path: the
 * target is never resolved as a URL against the replica's (`//host:port/…` or `http://host/…`
 * would replace the replica's host), and one that is not a path (origin-form) is refused.
 */
import { type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { requestTargetRefusal } from '@dstack/core/agent-protocol';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface ForwardOptions {
  /** Replica base URLs (`http://host:port`) in the order to try them. */
  replicas: readonly string[];
  /** Drop `Authorization`: it holds the caller's dstack token (see `GatewayRouting.passesAuthorization`). */
  dropAuthorization: boolean;
  /** `https` or `http`: what the client used. */
  protocol: string;
  /** The service's replicas now, in order, for another round after every one failed; default `replicas`. */
  replicasNow?: () => readonly string[];
  /** Until when (epoch ms) a bodiless request goes on trying, when later than the usual window: a request held for a replica. */
  retryUntil?: number;
  /** Called once a replica answered or the request got the gateway's 502. */
  settled?: () => void;
  /** How long a bodiless request goes on trying rounds (ms); `RETRY_WINDOW_MS` unless a test says otherwise. */
  retryWindowMs?: number;
}

/** How long a bodiless request goes on trying rounds over the replicas, as the server's proxy. */
const RETRY_WINDOW_MS = 5_000;
/** The pause before another round. */
const ROUND_PAUSE_MS = 200;

function upstreamHeaders(incoming: IncomingMessage, options: ForwardOptions): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  const listed = new Set(
    String(incoming.headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase()),
  );
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (HOP_BY_HOP.has(name) || listed.has(name)) continue;
    if (name === 'authorization' && options.dropAuthorization) continue;
    headers[name] = value;
  }
  const client = incoming.socket.remoteAddress ?? '';
  const previous = incoming.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = previous ? `${previous}, ${client}` : client;
  headers['x-forwarded-proto'] = options.protocol;
  headers['x-forwarded-host'] = incoming.headers.host ?? '';
  headers['x-real-ip'] = client;
  return headers;
}

function answer(response: ServerResponse, status: number, message: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ detail: [{ msg: message }] }));
}

export { answer as answerJson };

/** Where a replica listens, from its base URL (`http://host:port`, an IPv6 host in brackets). */
function replicaAddress(base: string): { hostname: string; port: number } {
  const url = new URL(base);
  return { hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 80) };
}

export function forwardRequest(
  incoming: IncomingMessage,
  response: ServerResponse,
  options: ForwardOptions,
): void {
  const targetRefusal = requestTargetRefusal(incoming.url);
  if (targetRefusal !== null) {
    answer(response, 400, targetRefusal);
    return;
  }
  const path = incoming.url as string;
  const bodiless = incoming.headers['content-length'] === undefined && !incoming.headers['transfer-encoding'];
  let replicas = options.replicas;
  const retryUntil = Math.max(
    options.retryUntil ?? 0,
    Date.now() + (options.retryWindowMs ?? RETRY_WINDOW_MS),
  );
  // Why each replica tried last failed, for the 502.
  const failures = new Map<string, string>();
  const fail = (status: number, message: string) => {
    options.settled?.();
    answer(response, status, message);
  };
  const attempt = (index: number): void => {
    if (response.destroyed) {
      options.settled?.();
      return;
    }
    const base = replicas[index];
    if (base === undefined) {
      if (!bodiless || Date.now() >= retryUntil) {
        const reasons = [...failures].map(([replica, reason]) => `${replica}: ${reason}`).join('; ');
        fail(502, `No replica of the service answered${reasons ? ` (${reasons})` : ''}`);
        return;
      }
      // Another round over the replicas of the moment, also through a moment without any (one
      // judged unready by its probes, one replaced).
      replicas = options.replicasNow?.() ?? options.replicas;
      setTimeout(() => attempt(0), ROUND_PAUSE_MS);
      return;
    }
    const upstream = request({
      ...replicaAddress(base),
      path,
      method: incoming.method,
      headers: upstreamHeaders(incoming, options),
    });
    upstream.on('response', (upstreamResponse) => {
      options.settled?.();
      const headers = { ...upstreamResponse.headers };
      for (const name of HOP_BY_HOP) delete headers[name];
      response.writeHead(upstreamResponse.statusCode ?? 502, headers);
      upstreamResponse.pipe(response);
      response.on('close', () => upstreamResponse.destroy());
    });
    upstream.on('error', (error) => {
      failures.set(base, (error as NodeJS.ErrnoException).code ?? error.message);
      if (bodiless && !response.headersSent) attempt(index + 1);
      else fail(502, `The replica did not answer: ${error.message}`);
    });
    if (bodiless) upstream.end();
    else incoming.pipe(upstream);
  };
  attempt(0);
}

/** A WebSocket (or other) upgrade: the raw bytes of both sides, after the request's head. */
export function forwardUpgrade(
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: ForwardOptions,
): void {
  const base = options.replicas[0];
  if (base === undefined || requestTargetRefusal(incoming.url) !== null) {
    socket.end(
      `HTTP/1.1 ${base === undefined ? '502 Bad Gateway' : '400 Bad Request'}\r\ncontent-length: 0\r\n\r\n`,
    );
    return;
  }
  const { hostname, port } = replicaAddress(base);
  const upstream = connect(port, hostname, () => {
    options.settled?.();
    const headers = upstreamHeaders(incoming, options);
    headers.connection = 'Upgrade';
    headers.upgrade = incoming.headers.upgrade;
    const lines = [`${incoming.method} ${incoming.url} HTTP/1.1`];
    for (const [name, value] of Object.entries(headers)) {
      for (const each of Array.isArray(value) ? value : [value]) {
        if (each !== undefined) lines.push(`${name}: ${each}`);
      }
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', () => {
    options.settled?.();
    socket.destroy();
  });
  socket.on('error', () => upstream.destroy());
}
