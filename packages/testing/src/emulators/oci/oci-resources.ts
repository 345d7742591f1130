/**
 * The emulated tenancy's resources, keyed by OCID, and what every OCI API answer shares: error
 * documents (`{code, message}` with `opc-request-id`), list pages (`opc-next-page`), OCIDs of
 * OCI's shape (`ocid1.<type>.oc1.<region key>.<unique>`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { EmulatorHttpError, type EmulatorResponse, json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';

/** An error as OCI's services answer it. */
export class OciApiError extends EmulatorHttpError {
  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(
      json({ code, message }, status, { 'opc-request-id': randomUUID(), ...headers }),
      `${status} ${code}: ${message}`,
    );
  }
}

export function notFound(what: string, id: string): OciApiError {
  return new OciApiError(
    404,
    'NotAuthorizedOrNotFound',
    `Authorization failed or requested resource not found: ${what} ${id}`,
  );
}

export function invalidParameter(message: string): OciApiError {
  return new OciApiError(400, 'InvalidParameter', message);
}

/** One resource: its API document (camelCase, as the SDK's models read it) and where it lives. */
export interface OciResource {
  readonly id: string;
  readonly type: string;
  /** The region it is in; null for the tenancy-wide (identity) ones. */
  readonly region: string | null;
  document: Record<string, unknown>;
}

export type Json = Record<string, unknown>;

export function object(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

export function string(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function requiredString(body: Json, field: string): string {
  const value = string(body[field]);
  if (!value) throw invalidParameter(`${field} is required`);
  return value;
}

export class OciResources {
  readonly #byId = new Map<string, OciResource>();

  ocid(type: string, regionKey: string | null): string {
    return `ocid1.${type}.oc1.${regionKey?.toLowerCase() ?? ''}.${randomBytes(30).toString('hex').slice(0, 60)}`;
  }

  put(resource: OciResource): OciResource {
    this.#byId.set(resource.id, resource);
    return resource;
  }

  get(id: string | undefined, type: string): OciResource | undefined {
    const resource = id === undefined ? undefined : this.#byId.get(id);
    return resource?.type === type ? resource : undefined;
  }

  /** The resource, or OCI's 404 naming it. */
  require(id: string | undefined, type: string): OciResource {
    const resource = this.get(id, type);
    if (!resource) throw notFound(type, id ?? '');
    return resource;
  }

  delete(id: string): void {
    this.#byId.delete(id);
  }

  list(type: string, filter: (document: Json, resource: OciResource) => boolean = () => true): OciResource[] {
    return [...this.#byId.values()].filter((each) => each.type === type && filter(each.document, each));
  }
}

/** Whether a list query's optional filters (`compartmentId`, `displayName`, …) match a document. */
export function matchesQuery(
  document: Json,
  query: Readonly<Record<string, string>>,
  fields: readonly string[],
): boolean {
  return fields.every((field) => query[field] === undefined || document[field] === query[field]);
}

/**
 * One page of a list call: `limit` items from the `page` token on, with `opc-next-page` when more
 * are left (the SDK's paginators follow it).
 */
export function page(request: EmulatorRequest, items: readonly unknown[]): EmulatorResponse {
  const limit = Math.max(1, Math.min(Number(request.query.limit ?? 100) || 100, 1000));
  const start = Number(request.query.page ?? 0) || 0;
  const slice = items.slice(start, start + limit);
  const headers: Record<string, string> = { 'opc-request-id': randomUUID() };
  if (start + limit < items.length) headers['opc-next-page'] = String(start + limit);
  return json(slice, 200, headers);
}

export function answer(value: unknown, status = 200, headers: Record<string, string> = {}): EmulatorResponse {
  return json(value, status, { 'opc-request-id': randomUUID(), ...headers });
}

export function now(): string {
  return new Date().toISOString();
}
