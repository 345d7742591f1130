/**
 * A route of the HTTP API: method, path template, auth level, zod body and
 * response schemas, and the handler. The router validates the body, checks
 * auth, maps errors to the one error shape, and the OpenAPI document is
 * generated from the same definitions.
 */
import type { z } from 'zod';
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
  /** The project of `{project_name}` routes, checked for membership. */
  project: ProjectsTable | null;
  /** The user's role in `project` (global admins count as admin). */
  projectRole: ProjectRole | null;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

/** A streamed answer (e.g. logs as NDJSON): written chunk by chunk until the iterable ends. */
export interface StreamResult {
  kind: 'stream';
  contentType: string;
  chunks: AsyncIterable<string | Uint8Array>;
}

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
  /** The JSON body schema; absent for routes without a body. */
  body?: TBody;
  /** The JSON response schema; absent for streaming routes and empty answers. */
  response?: TResponse;
  handler(ctx: RequestContext<z.output<TBody>>): Promise<z.input<TResponse> | StreamResult | undefined>;
}

/** Identity with inference: `defineRoute({ ..., body: S, handler: async ({ body }) => ... })`. */
export function defineRoute<TBody extends z.ZodType, TResponse extends z.ZodType>(
  route: RouteDefinition<TBody, TResponse>,
): RouteDefinition<TBody, TResponse> {
  return route;
}
