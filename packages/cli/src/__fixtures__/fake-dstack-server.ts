/**
 * A loopback HTTP server speaking the few endpoints of the dstack API that a test needs.
 * Request bodies are checked with the core request schemas (and run configurations with the
 * configuration schemas); anything wrong is answered 400 and recorded in `problems`, which
 * tests assert empty.
 */
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  ApplyFleetRequestSchema,
  ApplyRunRequestSchema,
  DeleteFleetsRequestSchema,
  DeleteRunsRequestSchema,
  GetOffersRequestSchema,
  GetRunPlanRequestSchema,
  GetRunRequestSchema,
  ListRunsRequestSchema,
  PollLogsRequestSchema,
  StopRunsRequestSchema,
  StreamLogsRequestSchema,
  strictRequestBody,
  validateConfiguration,
} from '@dstack/core';

export interface RecordedRequest {
  /** The path, e.g. `/api/project/main/runs/get_plan`. */
  path: string;
  /** The parsed JSON body. */
  body: unknown;
  authorization: string | undefined;
}

/**
 * Answers a request; an `HttpAnswer` sets the status, a `StreamAnswer` streams NDJSON lines,
 * anything else is a 200 JSON body.
 */
export type FakeHandler = (
  body: never,
  request: RecordedRequest,
  /** Aborted when the connection closes (a streaming handler stops then). */
  signal: AbortSignal,
) => unknown;

export class HttpAnswer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** A 200 answer of newline-delimited JSON: each value the iterable yields is written as one line at once. */
export class StreamAnswer {
  constructor(readonly lines: AsyncIterable<unknown> | Iterable<unknown>) {}
}

/**
 * Endpoints that a server of an older version lacks: without a handler they answer 404 the way
 * such a server does (FastAPI's `{"detail": "Not Found"}`), and that is not a problem.
 */
const OPTIONAL_ENDPOINTS = new Set(['logs/stream']);

interface SchemaLike {
  safeParse(value: unknown): { success: boolean; error?: { message: string } };
}

/**
 * Request schemas by endpoint (the part after `/api/` or `/api/project/{p}/`), strict at the top
 * level as the real server's routes are.
 */
const REQUEST_SCHEMAS: Record<string, SchemaLike> = strictSchemas({
  'runs/get_plan': GetRunPlanRequestSchema,
  'runs/apply': ApplyRunRequestSchema,
  'runs/get': GetRunRequestSchema,
  'runs/list': ListRunsRequestSchema,
  'runs/stop': StopRunsRequestSchema,
  'runs/delete': DeleteRunsRequestSchema,
  'logs/poll': PollLogsRequestSchema,
  'logs/stream': StreamLogsRequestSchema,
  'offers/list': GetOffersRequestSchema,
  'fleets/apply': ApplyFleetRequestSchema,
  'fleets/delete': DeleteFleetsRequestSchema,
});

function strictSchemas(
  schemas: Record<string, Parameters<typeof strictRequestBody>[0]>,
): Record<string, SchemaLike> {
  return Object.fromEntries(
    Object.entries(schemas).map(([endpoint, schema]) => [endpoint, strictRequestBody(schema)]),
  );
}

/** `/api/project/main/runs/get` → `runs/get`; `/api/runs/list` → `runs/list`. */
export function endpointOf(path: string): string {
  return path.replace(/^\/api\/project\/[^/]+\//, '').replace(/^\/api\//, '');
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json' }).end(text);
}

async function streamLines(response: ServerResponse, answer: StreamAnswer): Promise<void> {
  response.writeHead(200, { 'content-type': 'application/x-ndjson' });
  // A client that went away (Ctrl-C) stops the iterable through its `return`.
  for await (const line of answer.lines) {
    if (response.destroyed) break;
    response.write(`${JSON.stringify(line)}\n`);
  }
  response.end();
}

/** An upgrade request (`/proxy/ssh/...`) as the server received it. */
export interface RecordedUpgrade {
  /** The path without the query, e.g. `/proxy/ssh/main/my-run`. */
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
}

/**
 * Answers an authorized upgrade request: an `HttpAnswer` refuses it (JSON body, then the
 * socket is closed); a function is given the client's socket after the 101.
 */
export type FakeUpgradeHandler = (request: RecordedUpgrade) => HttpAnswer | ((socket: Socket) => void);

export interface FakeDstackServerOptions {
  /** The token requests must carry. Default `test-token`. */
  token?: string;
  /** Handlers by full path (`/api/project/main/runs/get`) or endpoint (`runs/get`). */
  handlers?: Record<string, FakeHandler>;
  /** Answers `GET` requests with `Upgrade: ssh` (the SSH route). Default: none (a problem). */
  upgrade?: FakeUpgradeHandler;
}

/** Writes a whole HTTP/1.1 answer on a raw socket and closes it: an upgrade refused. */
function refuseUpgrade(socket: Socket, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

export class FakeDstackServer {
  readonly requests: RecordedRequest[] = [];
  readonly upgrades: RecordedUpgrade[] = [];
  /** What was wrong with requests (bad body, unknown path, handler crash). */
  readonly problems: string[] = [];
  readonly token: string;
  readonly handlers: Record<string, FakeHandler>;
  /** Settable after start, like `handlers`. */
  upgrade: FakeUpgradeHandler | undefined;
  #server: Server;
  /** Upgraded sockets are no longer the HTTP server's: `close` ends them itself. */
  readonly #upgradedSockets = new Set<Socket>();
  #url = '';

  private constructor(options: FakeDstackServerOptions) {
    this.token = options.token ?? 'test-token';
    this.handlers = { ...options.handlers };
    this.upgrade = options.upgrade;
    this.#server = createServer((request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        this.problems.push(`handler failed: ${(error as Error).stack ?? String(error)}`);
        send(response, 500, { detail: [{ msg: 'fake server failure', code: 'error' }] });
      });
    });
    this.#server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) =>
      this.#handleUpgrade(request, socket, head),
    );
  }

  static async start(options: FakeDstackServerOptions = {}): Promise<FakeDstackServer> {
    const server = new FakeDstackServer(options);
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve));
    const { port } = server.#server.address() as AddressInfo;
    server.#url = `http://127.0.0.1:${port}`;
    return server;
  }

  get url(): string {
    return this.#url;
  }

  /** The recorded requests to an endpoint (`runs/stop`). */
  requestsTo(endpoint: string): RecordedRequest[] {
    return this.requests.filter((request) => endpointOf(request.path) === endpoint);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    for (const socket of this.#upgradedSockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handleUpgrade(request: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    this.#upgradedSockets.add(socket);
    socket.once('close', () => this.#upgradedSockets.delete(socket));
    const url = new URL(request.url ?? '/', 'http://localhost');
    const recorded = {
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: request.headers.authorization,
    };
    this.upgrades.push(recorded);
    if (request.method !== 'GET')
      this.problems.push(`${url.pathname}: upgrade with method ${request.method}`);
    if (request.headers.upgrade !== 'ssh') {
      this.problems.push(`${url.pathname}: Upgrade: ${request.headers.upgrade}, expected ssh`);
    }
    if (request.headers.authorization !== `Bearer ${this.token}`) {
      refuseUpgrade(socket, 401, { detail: [{ msg: 'Unauthorized', code: 'error' }] });
      return;
    }
    if (!this.upgrade) {
      this.problems.push(`${url.pathname}: no upgrade handler`);
      refuseUpgrade(socket, 404, { detail: [{ msg: 'no upgrade handler', code: 'not_found' }] });
      return;
    }
    const answer = this.upgrade(recorded);
    if (answer instanceof HttpAnswer) {
      refuseUpgrade(socket, answer.status, answer.body);
      return;
    }
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ssh\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    answer(socket);
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const text = await readBody(request);
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      this.problems.push(`${path}: body is not JSON: ${text}`);
      send(response, 400, { detail: [{ msg: 'body is not JSON', code: 'error' }] });
      return;
    }
    const recorded = { path, body, authorization: request.headers.authorization };
    this.requests.push(recorded);
    if (request.method !== 'POST') this.problems.push(`${path}: method ${request.method}, expected POST`);
    if (request.headers.authorization !== `Bearer ${this.token}`) {
      send(response, 401, { detail: [{ msg: 'Unauthorized', code: 'error' }] });
      return;
    }
    const endpoint = endpointOf(path);
    const problem = this.#checkBody(endpoint, body);
    if (problem) {
      this.problems.push(`${path}: ${problem}`);
      send(response, 400, { detail: [{ msg: problem, code: 'invalid_request' }] });
      return;
    }
    const handler = this.handlers[path] ?? this.handlers[endpoint];
    if (!handler && OPTIONAL_ENDPOINTS.has(endpoint)) {
      send(response, 404, { detail: 'Not Found' });
      return;
    }
    if (!handler) {
      this.problems.push(`${path}: no handler`);
      send(response, 404, { detail: [{ msg: `no handler for ${path}`, code: 'not_found' }] });
      return;
    }
    const closed = new AbortController();
    response.on('close', () => closed.abort());
    const answer = await handler(body as never, recorded, closed.signal);
    if (answer instanceof HttpAnswer) send(response, answer.status, answer.body);
    else if (answer instanceof StreamAnswer) await streamLines(response, answer);
    else send(response, 200, answer ?? null);
  }

  #checkBody(endpoint: string, body: unknown): string | undefined {
    const schema = REQUEST_SCHEMAS[endpoint];
    if (!schema) return undefined;
    const result = schema.safeParse(body);
    if (!result.success) return `invalid body: ${result.error?.message}`;
    const runSpec =
      endpoint === 'runs/get_plan'
        ? (body as { run_spec: { configuration: unknown } }).run_spec
        : endpoint === 'runs/apply'
          ? (body as { plan: { run_spec: { configuration: unknown } } }).plan.run_spec
          : undefined;
    const configuration =
      runSpec?.configuration ??
      (endpoint === 'fleets/apply'
        ? (body as { plan: { spec: { configuration: unknown } } }).plan.spec.configuration
        : undefined);
    if (configuration !== undefined) {
      try {
        validateConfiguration(configuration);
      } catch (error) {
        return `invalid configuration: ${(error as Error).message}`;
      }
    }
    return undefined;
  }
}
