import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MaybePromise } from '../conformance/test-backend-options.js';
import {
  ANY_ROUTE,
  DEFAULT_THROTTLE_RESPONSE,
  type EmulatorFault,
  EmulatorFaults,
} from './emulator-faults.js';
import {
  EmulatorConnectionReset,
  EmulatorHttpError,
  type EmulatorResponse,
  json,
} from './emulator-responses.js';
import { compileRoutePattern, type RoutePattern } from './route-pattern.js';

/** A request as a route handler sees it. */
export interface EmulatorRequest {
  /** The name of the route that matched. */
  readonly route: string;
  /** Upper case, e.g. `POST`. */
  readonly method: string;
  /** The path without the query string, e.g. `/instances/i-1`. */
  readonly path: string;
  /** The request target as received (path and query string): what request signatures sign. */
  readonly target: string;
  /** Path parameters of the route pattern (`:id` → `params.id`). */
  readonly params: Readonly<Record<string, string>>;
  /** Query parameters; the last value wins when one repeats (see `searchParams` for all). */
  readonly query: Readonly<Record<string, string>>;
  readonly searchParams: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /**
   * The body parsed by content type: JSON → the value; form-urlencoded (the
   * EC2 Query API) → a record of strings; anything else → the text. Undefined when empty.
   */
  readonly body: unknown;
  /** The body as received. */
  readonly rawBody: Buffer;
  /** The emulator's base URL, e.g. for links in answers. */
  readonly baseUrl: string;
}

/** One route of an emulator. */
export interface EmulatorRoute {
  /** Names the route for faults and recordings. Default `<METHOD> <path>`. */
  name?: string;
  /** HTTP method, or `*` for any. */
  method: string;
  /** Path pattern: literal segments, `:param` segments, and an optional trailing `/*`. */
  path: string;
  /**
   * An extra condition on the request, e.g. the EC2 `Action` form field (every
   * Query API call is `POST /`). Default: any request on the path.
   */
  when?: (request: EmulatorRequest) => boolean;
  /** Answers the request; throw `EmulatorHttpError` to answer with an error document. */
  handle: (request: EmulatorRequest) => MaybePromise<EmulatorResponse>;
}

/** A request the emulator received, with what it did. */
export interface RecordedRequest {
  /** The route that matched, or null when none did (answered 404). */
  readonly route: string | null;
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
  /** The status sent, or `reset` when the connection was destroyed. */
  readonly status: number | 'reset';
  /** The fault applied, if any. */
  readonly fault: EmulatorFault['kind'] | undefined;
}

export interface EmulatorServerOptions {
  routes: readonly EmulatorRoute[];
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /**
   * Serve HTTPS with this certificate and key (PEM): for providers whose SDKs send their
   * credentials only over TLS (Azure's). Default: plain HTTP.
   */
  tls?: { readonly certificate: string; readonly key: string };
  /**
   * Read a path that starts with several slashes as starting with one, as Resource Manager does
   * (Azure's SDKs send `//subscriptions/…` for a call by resource id). Default false.
   */
  collapseLeadingSlashes?: boolean;
}

/** A running emulator; faults and recordings are keyed by route name (`*` for any route). */
export interface EmulatorServer {
  /** `http://127.0.0.1:<port>` (`https://` with `tls`). */
  readonly url: string;
  readonly port: number;
  /** Every request received so far, oldest first. */
  readonly requests: readonly RecordedRequest[];
  /** The requests a route received (unmatched requests under `null`). */
  requestsTo(route: string | null): RecordedRequest[];
  clearRequests(): void;
  /** The next `count` requests of `route` get `response` instead of the handler's answer. Default count 1. */
  failNext(route: string, response: EmulatorResponse, count?: number): void;
  /**
   * The next `count` requests of `route` are throttled: default 429 with
   * `{code: 'RequestLimitExceeded'}` and `Retry-After: 1`; pass `response` for
   * the provider's own format (EC2 answers 503 with XML).
   */
  throttleNext(route: string, options?: { count?: number; response?: EmulatorResponse }): void;
  /** The next `count` requests of `route` are answered `delayMs` later than usual. Default count 1. */
  delayNext(route: string, delayMs: number, count?: number): void;
  /** The next `count` requests of `route` get their connection destroyed, unanswered. Default count 1. */
  resetNext(route: string, count?: number): void;
  /** How many requests of `route` still get a fault. */
  pendingFaults(route: string): number;
  clearFaults(): void;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

interface CompiledRoute {
  name: string;
  method: string;
  pattern: RoutePattern;
  /** The route as the caller gave it (its `when` and `handle`). */
  definition: EmulatorRoute;
}

/** Largest request body read: provider API calls are small. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Starts a loopback HTTP server that speaks a provider's wire protocol through
 * `routes`, records every request, and injects faults on demand, so a
 * backend's real HTTP client runs unchanged against it.
 */
export async function startEmulatorServer(options: EmulatorServerOptions): Promise<EmulatorServer> {
  const routes = compileRoutes(options.routes);
  const faults = new EmulatorFaults();
  const requests: RecordedRequest[] = [];
  const host = options.host ?? '127.0.0.1';
  let baseUrl = '';

  const listener = (request: IncomingMessage, response: ServerResponse) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, json({ error: String(error) }, 500));
      else response.destroy();
    });
  };
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.certificate, key: options.tls.key }, listener)
    : createServer(listener);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = request.url ?? '/';
    const url = new URL(options.collapseLeadingSlashes ? raw.replace(/^\/{2,}/, '/') : raw, baseUrl);
    const method = (request.method ?? 'GET').toUpperCase();
    const rawBody = await readBody(request);
    const query = Object.fromEntries(url.searchParams);
    const record = (route: string | null, body: unknown, status: number | 'reset', fault?: EmulatorFault) => {
      requests.push({
        route,
        method,
        path: url.pathname,
        query,
        headers: request.headers,
        body,
        status,
        fault: fault?.kind,
      });
    };
    let body: unknown;
    try {
      body = parseBody(rawBody, request.headers['content-type']);
    } catch (error) {
      const answer = json({ error: `request body is not valid: ${(error as Error).message}` }, 400);
      record(null, rawBody.toString('utf8'), 400);
      send(response, answer);
      return;
    }
    const matched = findRoute(routes, {
      method,
      path: url.pathname,
      target: request.url ?? '/',
      query,
      searchParams: url.searchParams,
      headers: request.headers,
      body,
      rawBody,
      baseUrl,
    });
    if (!matched) {
      record(null, body, 404);
      send(response, json({ error: `the emulator has no route for ${method} ${url.pathname}` }, 404));
      return;
    }
    const fault = faults.take(matched.request.route);
    /** Drops the connection without an answer, as a reset fault or a handler asks. */
    const dropConnection = () => {
      record(matched.request.route, body, 'reset', fault);
      request.socket.destroy();
    };
    if (fault?.kind === 'reset') {
      dropConnection();
      return;
    }
    if (fault?.kind === 'respond') {
      record(matched.request.route, body, fault.response.status ?? 200, fault);
      send(response, fault.response);
      return;
    }
    if (fault?.kind === 'delay') await sleep(fault.delayMs);
    let answer: EmulatorResponse;
    try {
      answer = await matched.route.definition.handle(matched.request);
    } catch (error) {
      if (error instanceof EmulatorConnectionReset) {
        dropConnection();
        return;
      }
      if (!(error instanceof EmulatorHttpError)) throw error;
      answer = error.response;
    }
    record(matched.request.route, body, answer.status ?? 200, fault);
    send(response, answer);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url: baseUrl,
    port,
    requests,
    requestsTo: (route) => requests.filter((each) => each.route === route),
    clearRequests: () => {
      requests.length = 0;
    },
    failNext: (route, response, count = 1) => faults.add(route, { kind: 'respond', response }, count),
    throttleNext: (route, throttle = {}) =>
      faults.add(
        route,
        { kind: 'respond', response: throttle.response ?? DEFAULT_THROTTLE_RESPONSE },
        throttle.count ?? 1,
      ),
    delayNext: (route, delayMs, count = 1) => faults.add(route, { kind: 'delay', delayMs }, count),
    resetNext: (route, count = 1) => faults.add(route, { kind: 'reset' }, count),
    pendingFaults: (route) => faults.pending(route),
    clearFaults: () => faults.clear(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function compileRoutes(routes: readonly EmulatorRoute[]): CompiledRoute[] {
  const names = new Set<string>();
  return routes.map((route, index) => {
    if (typeof route.handle !== 'function') {
      throw new Error(`Emulator route #${index} (${route.method} ${route.path}) has no handle function`);
    }
    const method = route.method.toUpperCase();
    const name = route.name ?? `${method} ${route.path}`;
    if (name === ANY_ROUTE) throw new Error(`Emulator route name "${ANY_ROUTE}" is reserved for every route`);
    if (names.has(name)) {
      throw new Error(`Emulator route name ${JSON.stringify(name)} is used twice; give the routes a name`);
    }
    names.add(name);
    return { name, method, pattern: compileRoutePattern(route.path), definition: route };
  });
}

/** The first route whose method, path pattern and `when` accept the request, with the request as its handler sees it. */
function findRoute(
  routes: readonly CompiledRoute[],
  received: Omit<EmulatorRequest, 'route' | 'params'>,
): { route: CompiledRoute; request: EmulatorRequest } | undefined {
  for (const route of routes) {
    if (route.method !== '*' && route.method !== received.method) continue;
    const params = route.pattern.match(received.path);
    if (!params) continue;
    const request: EmulatorRequest = { ...received, route: route.name, params };
    if (route.definition.when && !route.definition.when(request)) continue;
    return { route, request };
  }
  return undefined;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseBody(rawBody: Buffer, contentType: string | undefined): unknown {
  if (rawBody.length === 0) return undefined;
  const text = rawBody.toString('utf8');
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || type.endsWith('+json')) return JSON.parse(text);
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(text));
  return text;
}

function send(response: ServerResponse, answer: EmulatorResponse): void {
  const body = answer.body ?? '';
  response.writeHead(answer.status ?? 200, {
    ...answer.headers,
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength,
  });
  response.end(body);
}
