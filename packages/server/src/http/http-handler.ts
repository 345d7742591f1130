/**
 * The API on node:http without a framework: route matching, bearer auth,
 * project membership, body validation with the route's zod schema, JSON and
 * streamed answers, protocol upgrades for the raw routes that take them, and
 * every error in the one shape of error-mapping.ts.
 */

import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { isValidProjectName, PROJECT_NAME_RULE, ServerClientError } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { ProjectsTable, UsersTable } from '../db/schema.js';
import { ForbiddenError } from '../security/access-errors.js';
import { HttpError, mapErrorToHttp } from './error-mapping.js';
import { SANDBOX_POLICY } from './origin-isolation.js';
import { formatResponseHead, matchRawRoute, type RawRouteDefinition } from './raw-route.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  JSON_CONTENT_TYPE,
  NO_BODY_FIELDS,
  type ProjectRole,
  type RequestContext,
  type RouteDefinition,
  type StreamResult,
  type UploadedFile,
  type UploadOptions,
} from './route.js';
import { createRouteMatcher } from './route-matcher.js';
import type { StaticSite } from './static-files.js';
import { toWireBackendTypes } from './wire-backend-type.js';

/**
 * Who a request is and what it may reach, passed in by app.ts (`accounts/request-authentication.ts`):
 * the handler checks each route's `auth` through it, so `http/` needs no domain folder.
 */
export interface RequestAuthentication {
  /** The user of the request's `Authorization: Bearer <token>`; throws `NotAuthenticatedError`. */
  authenticate(request: IncomingMessage): Promise<UsersTable>;
  /** The project named in the path and the user's role in it; throws when the user may not see it. */
  projectAccess(
    user: UsersTable,
    projectName: string,
  ): Promise<{ project: ProjectsTable; role: ProjectRole }>;
  /** Whether `role` is at least `required`. */
  hasProjectRole(role: ProjectRole, required: ProjectRole): boolean;
}

export interface HttpHandlerOptions {
  /** How requests are authenticated. Required. */
  authentication: RequestAuthentication;
  /** Where unexpected (500) errors are reported; default `console.error`. */
  logError?: (message: string) => void;
  /**
   * Path prefixes answered by their own function instead of a JSON route (any method, bodies
   * streamed untouched; see raw-route.ts), e.g. the service proxy. Default: none.
   */
  rawRoutes?: readonly RawRouteDefinition[];
  /**
   * The web console, answering the GET and HEAD requests that no route takes (never under
   * `/api`, `/proxy` or `/metrics`). Default: none (those requests are 404).
   */
  staticSite?: StaticSite | null;
}

/** The request handler for `http.createServer`, which also knows whether requests are still being answered. */
export interface HttpHandler {
  (request: IncomingMessage, response: ServerResponse): void;
  /**
   * The server's `'upgrade'` listener: gives the request to the raw route of its path that
   * takes upgrades, else answers 404 on the socket.
   */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * Resolves once every request taken so far is answered: its handler returned and its
   * response closed (finished or cut); for an upgrade, once its handler returned (a tunnel it
   * opened may stay open). Used on shutdown so that streams write their last line, and no
   * handler is mid-query, before the database closes.
   */
  whenIdle(): Promise<void>;
  /**
   * Destroys the connections taken by upgrades. node:http no longer tracks them, so
   * `server.closeAllConnections()` leaves them open and `server.close()` would wait for them.
   */
  destroyUpgradedConnections(): void;
}

const REQUIRED_PROJECT_ROLE: Partial<Record<RouteDefinition['auth'], ProjectRole>> = {
  'project-member': 'user',
  'project-manager': 'manager',
  'project-admin': 'admin',
};

/** The 413 of a JSON body over its route's limit. */
function bodyTooLarge(bytes: number, limit: number): HttpError {
  return new HttpError(
    413,
    `Request body is ${bytes} bytes, over the limit of ${limit} bytes for this route`,
    'request_too_large',
  );
}

/**
 * Reads the body up to `maxBytes`. Of a larger body nothing is kept once it is known to be larger
 * (its declared length, or the bytes so far): the rest is counted and thrown away chunk by chunk
 * before answering, because closing the socket mid-upload would make the client see a connection
 * reset instead of the answer.
 */
export function readBody(
  request: IncomingMessage,
  maxBytes: number,
  tooLargeError: (bytes: number) => Error,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    let tooLarge = Number.isFinite(declared) && declared > maxBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes && !tooLarge) {
        tooLarge = true;
        chunks.length = 0;
      }
      if (!tooLarge) chunks.push(chunk);
    });
    request.on('end', () => {
      if (tooLarge) {
        reject(tooLargeError(Number.isFinite(declared) ? Math.max(declared, size) : size));
      } else {
        resolve(Buffer.concat(chunks));
      }
    });
    request.on('error', reject);
  });
}

/** Room for the multipart boundaries and part headers around an upload's file. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * The `file` part of a `multipart/form-data` request, checked against the route's limit: the
 * request's declared size first (nothing is kept of a body that cannot fit), then the file's own.
 */
async function readUpload(
  app: AppContext,
  request: IncomingMessage,
  options: UploadOptions,
): Promise<UploadedFile> {
  const limit = options.maxBytes(app);
  const contentType = request.headers['content-type'] ?? '';
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
    request.resume();
    throw new ServerClientError('expected a multipart/form-data body with the file in the part "file"', {
      code: 'invalid_request',
      fields: [['file']],
    });
  }
  const raw = await readBody(
    request,
    limit > 0 ? limit + MULTIPART_OVERHEAD_BYTES : Number.MAX_SAFE_INTEGER,
    (bytes) => options.tooLarge(bytes, limit),
  );
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  } catch (error) {
    throw new ServerClientError(`invalid multipart/form-data body: ${errorText(error)}`, {
      code: 'invalid_request',
    });
  }
  const file = form.get('file');
  if (file === null || typeof file === 'string') {
    throw new ServerClientError('the body has no file in the part "file"', {
      code: 'invalid_request',
      fields: [['file']],
    });
  }
  if (limit > 0 && file.size > limit) throw options.tooLarge(file.size, limit);
  return { filename: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Resolves once the event loop has polled for I/O: the requests whose bytes arrived meanwhile are
 * read and started. One `setImmediate` alone resumes before the next poll (the check phase comes
 * right after the poll phase that was running), hence two.
 */
async function afterPendingIo(): Promise<void> {
  await nextTurn();
  await nextTurn();
}

function parseJson(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `Malformed JSON body: ${(error as Error).message}`, 'invalid_json');
  }
}

/** The token of the request's `Authorization: Bearer <token>`, or null. */
export function bearerToken(request: IncomingMessage): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match ? match[1]! : null;
}

/** A header's one value (the first, when a client sent it twice); null when absent. */
function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

function writeJson(response: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body ?? null);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

/**
 * An error answer written on an upgrade's bare socket, which is then closed: node:http's own
 * answers to bad requests end the same way.
 */
function writeJsonToSocket(
  socket: Socket,
  status: number,
  body: unknown,
  headers: OutgoingHttpHeaders,
): void {
  const payload = JSON.stringify(body ?? null);
  socket.write(
    formatResponseHead(status, undefined, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
      connection: 'close',
    }) + payload,
  );
  socket.destroySoon();
}

function isStreamResult(value: unknown): value is StreamResult {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'stream';
}

/**
 * Headers of every streamed answer: proxies (nginx and others honouring `x-accel-buffering`)
 * must pass lines on as they come rather than buffer the answer, and nothing may cache it.
 */
export const STREAM_HEADERS = { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' } as const;

async function writeStream(
  response: ServerResponse,
  contentType: string,
  result: StreamResult,
  signal: AbortSignal,
): Promise<void> {
  response.writeHead(200, { 'content-type': contentType, ...STREAM_HEADERS });
  for await (const chunk of result.chunks) {
    if (signal.aborted) break;
    if (!response.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          response.off('drain', done);
          response.off('close', done);
          resolve();
        };
        response.on('drain', done);
        response.on('close', done);
      });
    }
  }
  response.end();
}

/** Builds the request handler for `http.createServer`. */
export function createHttpHandler(
  app: AppContext,
  routes: readonly RouteDefinition[],
  options: HttpHandlerOptions,
): HttpHandler {
  const { authentication } = options;
  const match = createRouteMatcher(routes);
  const logError = options.logError ?? ((message: string) => console.error(`[dstack-server] ${message}`));
  const rawRoutes = options.rawRoutes ?? [];

  async function handle(
    request: IncomingMessage,
    response: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const rawRoute = matchRawRoute(rawRoutes, url.pathname);
    if (rawRoute) {
      await rawRoute.handle({ app, request, response, signal });
      return;
    }
    const found = match(request.method ?? 'GET', url.pathname);
    if (found.kind === 'not-found' && options.staticSite?.serve(request, response, url.pathname)) return;
    if (found.kind === 'not-found') throw new HttpError(404, `Not found: ${url.pathname}`, 'not_found');
    if (found.kind === 'method-not-allowed') {
      response.setHeader('allow', found.allowed.join(', '));
      throw new HttpError(
        405,
        `Method ${request.method} not allowed; use ${found.allowed.join(' or ')}`,
        'method_not_allowed',
      );
    }
    const { route, params } = found;

    let user: UsersTable | null = null;
    let project: ProjectsTable | null = null;
    let projectRole: ProjectRole | null = null;
    if (route.auth !== 'none') {
      user = await authentication.authenticate(request);
      if (route.auth === 'admin' && user.global_role !== 'admin') throw new ForbiddenError();
      const requiredRole = REQUIRED_PROJECT_ROLE[route.auth];
      if (requiredRole) {
        const projectName = params.project_name;
        if (projectName === undefined) {
          throw new Error(`Route ${route.path} has auth "${route.auth}" but no {project_name} parameter`);
        }
        // Names that no project can have are refused before any lookup, naming the parameter.
        if (!isValidProjectName(projectName)) {
          throw new ServerClientError(
            `project_name (in the path): project name must be ${PROJECT_NAME_RULE}`,
            {
              code: 'invalid_request',
              fields: [['project_name']],
            },
          );
        }
        const access = await authentication.projectAccess(user, projectName);
        if (!authentication.hasProjectRole(access.role, requiredRole)) throw new ForbiddenError();
        project = access.project;
        projectRole = access.role;
      }
    }

    let body: unknown;
    let upload: UploadedFile | undefined;
    if (route.upload) {
      upload = await readUpload(app, request, route.upload);
    } else {
      const limit = route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
      const raw = await readBody(request, limit, (bytes) => bodyTooLarge(bytes, limit));
      const parsed = (route.body ?? NO_BODY_FIELDS).safeParse(parseJson(raw));
      if (!parsed.success) throw parsed.error;
      body = route.body ? parsed.data : undefined;
      // Parsing a big body took a while, and on SQLite the handler may run to its answer without
      // waiting for I/O: let the requests that came meanwhile (a `get_my_user`) go first.
      if (raw.length > DEFAULT_MAX_BODY_BYTES) await afterPendingIo();
    }

    const context: RequestContext<unknown> = {
      app,
      body,
      params,
      query: url.searchParams,
      user,
      token: user ? bearerToken(request) : null,
      project,
      projectRole,
      signal,
      clientApiVersion: headerValue(request.headers['x-api-version']),
      routes,
      ...(upload === undefined ? {} : { upload }),
    };
    const result = await route.handler(context);
    const contentType = route.responseContentType ?? JSON_CONTENT_TYPE;
    if (isStreamResult(result) !== (contentType !== JSON_CONTENT_TYPE)) {
      throw new Error(
        `The answer of ${route.method} ${route.path} is ${isStreamResult(result) ? 'a stream' : 'not a stream'} ` +
          `but the route declares responseContentType ${contentType}`,
      );
    }
    if (isStreamResult(result)) {
      await writeStream(response, contentType, result, signal);
      return;
    }
    // The response schema is the API's contract: answers that break it are server bugs, not client data.
    let output: unknown = result ?? null;
    if (route.response && result !== undefined) {
      const checked = route.response.safeParse(result);
      if (!checked.success) {
        throw new Error(
          `The answer of ${route.method} ${route.path} does not match its response schema: ${checked.error.message}`,
        );
      }
      output = checked.data;
    }
    writeJson(response, 200, toWireBackendTypes(output));
  }

  async function handleUpgrade(
    request: IncomingMessage,
    socket: Socket,
    head: Buffer,
    signal: AbortSignal,
    errorHeaders: OutgoingHttpHeaders,
  ): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const rawRoute = matchRawRoute(rawRoutes, url.pathname);
    if (!rawRoute?.upgrade) {
      throw new HttpError(404, `Not found: ${url.pathname} takes no protocol upgrade`, 'not_found');
    }
    await rawRoute.upgrade({
      app,
      request,
      socket,
      head,
      signal,
      setErrorHeader: (name, value) => {
        errorHeaders[name.toLowerCase()] = value;
      },
    });
  }

  const active = new Set<Promise<unknown>>();
  const upgradedConnections = new Set<Socket>();

  const upgrade = (request: IncomingMessage, duplex: Duplex, head: Buffer) => {
    // node:http passes a net.Socket unless the server was given another socket type ('upgrade' event docs).
    const socket = duplex as Socket;
    // node:http removed its own listeners: an error (a reset) must not crash the server; 'close' follows it.
    socket.on('error', () => {});
    const controller = new AbortController();
    upgradedConnections.add(socket);
    socket.once('close', () => {
      upgradedConnections.delete(socket);
      controller.abort(new Error('The client disconnected'));
    });
    // An upgrade is never the console's: its error answers are sandboxed like any proxy answer.
    const errorHeaders: OutgoingHttpHeaders = { 'content-security-policy': SANDBOX_POLICY };
    const handled = handleUpgrade(request, socket, head, controller.signal, errorHeaders).catch(
      (error: unknown) => {
        const mapped = mapErrorToHttp(error);
        if (mapped.logMessage) logError(`${request.method} ${request.url} (upgrade): ${mapped.logMessage}`);
        // The route had started its answer: another one after it would be garbage to the client.
        if (!socket.writable || socket.bytesWritten > 0) {
          socket.destroy();
          return;
        }
        writeJsonToSocket(socket, mapped.status, mapped.body, errorHeaders);
      },
    );
    active.add(handled);
    void handled.finally(() => active.delete(handled));
  };

  const handler = (request: IncomingMessage, response: ServerResponse) => {
    // Every answer but the console's own files (which set their policy in writeHead, taking
    // precedence) gets an opaque origin in a browser: see origin-isolation.ts.
    response.setHeader('content-security-policy', SANDBOX_POLICY);
    const controller = new AbortController();
    const closed = new Promise<void>((resolve) => {
      response.on('close', () => {
        if (!response.writableFinished) controller.abort(new Error('The client disconnected'));
        resolve();
      });
    });
    const handled = handle(request, response, controller.signal).catch((error: unknown) => {
      const mapped = mapErrorToHttp(error);
      if (mapped.logMessage) logError(`${request.method} ${request.url}: ${mapped.logMessage}`);
      if (response.headersSent) {
        // Mid-stream failure: the status is already sent; cut the stream so the client sees it ended abnormally.
        response.destroy();
        return;
      }
      writeJson(response, mapped.status, mapped.body);
    });
    const answered = Promise.all([handled, closed]);
    active.add(answered);
    void answered.finally(() => active.delete(answered));
  };
  return Object.assign(handler, {
    upgrade,
    async whenIdle() {
      while (active.size > 0) await Promise.allSettled([...active]);
    },
    destroyUpgradedConnections() {
      for (const socket of upgradedConnections) socket.destroy();
    },
  });
}
