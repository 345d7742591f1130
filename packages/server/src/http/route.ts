/**
 * A route of the HTTP API: method, path template, auth level, zod body and
 * response schemas, and the handler. The router validates the body, checks
 * auth, maps errors to the one error shape, and the OpenAPI document is
 * generated from the same definitions.
 */
import { strictRequestBody } from '@dstack/core';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import type { ProjectsTable, UsersTable } from '../db/schema.js';

export type RouteAuth =
  /** No token needed. */
  | 'none'
  /** Any active user. */
  | 'user'
  /** A user with global role admin. */
  | 'admin'
  /** A member of `{project_name}` (or a global admin). */
  | 'project-member'
  /** A manager or admin of `{project_name}` (or a global admin). */
  | 'project-manager'
  /** An admin of `{project_name}` (or a global admin). */
  | 'project-admin';

export type ProjectRole = 'admin' | 'manager' | 'user';

export interface RequestContext<TBody> {
  app: AppContext;
  body: TBody;
  /** Path parameters, e.g. `project_name`. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** The authenticated user; null only on `auth: 'none'` routes. */
  user: UsersTable | null;
  /** The bearer token that authenticated `user` (null with it). */
  token: string | null;
  /** The project of `{project_name}` routes, checked for membership. */
  project: ProjectsTable | null;
  /** The user's role in `project` (global admins count as admin). */
  projectRole: ProjectRole | null;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
  /** `X-API-VERSION`: the version dstack's own Python client sends on every call (null from others). */
  clientApiVersion: string | null;
  /** Every route the handler serves (for the OpenAPI document). */
  routes: readonly RouteDefinition[];
  /** The file of an `upload` route (absent on the others). */
  upload?: UploadedFile;
}

/** The `file` part of a `multipart/form-data` upload: its file name (dstack sends the hash there) and bytes. */
export interface UploadedFile {
  filename: string;
  bytes: Uint8Array;
}

/**
 * A route taking one file as `multipart/form-data` (field `file`), as dstack's upload routes do,
 * instead of a JSON body. Its own size limit replaces the JSON body's.
 */
export interface UploadOptions {
  /** The largest file accepted, in bytes; 0 means no limit. */
  maxBytes(app: AppContext): number;
  /** The error for a file (or a request) of `bytes` over `limit`. */
  tooLarge(bytes: number, limit: number): Error;
}

/**
 * A streamed answer (e.g. logs as NDJSON): written chunk by chunk until the iterable ends, with
 * the route's `responseContentType`. The iterable should watch `app.signal` and end with a last
 * chunk when the server stops: the server waits a moment for it before closing connections.
 */
export interface StreamResult {
  kind: 'stream';
  chunks: AsyncIterable<string | Uint8Array>;
}

/**
 * The largest JSON body of most routes: 1 MiB. Their bodies are names, filters and small settings,
 * far below it; a larger one is refused before it is parsed, so that it cannot keep the server
 * busy (parsing and validating are synchronous) while others wait.
 */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * The largest body of `runs/get_plan`: 4 MiB. It carries the run spec, whose configuration comes
 * from at most 1 MiB of YAML (what the CLI reads) and holds at most 100,000 values (the bounds of
 * `boundedConfiguration`); a larger body only costs parsing time while others wait.
 */
export const RUN_PLAN_MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The largest body of the `apply` routes: 16 MiB. Besides the spec, `runs/apply` sends back the
 * current run, with the spec of every job: about (2 + jobs) times the configuration, measured
 * (560 KB of configuration, one job: 1.7 MB).
 */
export const SPEC_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The default `responseContentType`: one JSON answer. */
export const JSON_CONTENT_TYPE = 'application/json';

export interface RouteDefinition<
  TBody extends z.ZodType = z.ZodType,
  TResponse extends z.ZodType = z.ZodType,
> {
  method: 'GET' | 'POST';
  /** Path template with `{param}` segments: `/api/project/{project_name}/runs/apply`. */
  path: string;
  /** One line for the OpenAPI document. */
  summary: string;
  tags?: readonly string[];
  auth: RouteAuth;
  /**
   * The JSON body schema; absent for routes without a body (which then take no fields). An
   * object's unknown top-level fields are refused (`defineRoute` makes it strict) unless it is a
   * `z.looseObject`, whose extra fields are checked further on (a backend's own config).
   */
  body?: TBody;
  /** Set for a route that takes a file (`multipart/form-data`) instead of a JSON body; `body` must be absent. */
  upload?: UploadOptions;
  /**
   * The largest JSON body accepted, in bytes; a larger one is answered 413 without being kept.
   * Default `DEFAULT_MAX_BODY_BYTES`. An `upload` route has its own limit instead.
   */
  maxBodyBytes?: number;
  /**
   * The response schema; absent for empty answers. For a streaming content type it is the
   * schema of one line (the stream itself is not validated).
   */
  response?: TResponse;
  /**
   * Default `application/json`: the handler returns one value, checked against `response`.
   * Any other type (e.g. `application/x-ndjson`) makes this a streaming route: the handler
   * returns a `StreamResult`, and the OpenAPI document lists `response` under this type.
   */
  responseContentType?: string;
  handler(ctx: RequestContext<z.output<TBody>>): Promise<z.input<TResponse> | StreamResult | undefined>;
}

/**
 * The route with its body made strict at the top level (`strictRequestBody` of @dstack/core:
 * an unknown field is a 400 naming it), types inferred:
 * `defineRoute({ ..., body: S, handler: async ({ body }) => ... })`.
 */
export function defineRoute<TBody extends z.ZodType, TResponse extends z.ZodType>(
  route: RouteDefinition<TBody, TResponse>,
): RouteDefinition<TBody, TResponse> {
  return route.body ? { ...route, body: strictRequestBody(route.body) } : route;
}

/** The body of routes that declare none: an empty object (or nothing), no fields. */
export const NO_BODY_FIELDS = strictRequestBody(z.object({}));

/** Project routes always have a user and a project (the router checked membership). */
export function projectContext(ctx: RequestContext<unknown>): { project: ProjectsTable; user: UsersTable } {
  if (!ctx.project || !ctx.user) throw new Error('project route without project or user');
  return { project: ctx.project, user: ctx.user };
}
