import * as z from 'zod';

/**
 * Backend types dstack knows (`core/models/backends/base.py`). Third-party
 * backends add their own, so `BackendType` accepts any lowercase identifier.
 */
export const KNOWN_BACKEND_TYPES = [
  'amddevcloud',
  'aws',
  'azure',
  'cloudrift',
  'crusoe',
  'cudo',
  'datacrunch',
  'digitalocean',
  'dstack',
  'gcp',
  'hotaisle',
  'jarvislabs',
  'kubernetes',
  'lambda',
  'local',
  'nebius',
  'oci',
  'remote',
  'runpod',
  'slurm',
  'tensordock',
  'vastai',
  'verda',
  'vultr',
] as const;
export type KnownBackendType = (typeof KNOWN_BACKEND_TYPES)[number];

/** A backend type: a known one or any lowercase identifier of at most 40 characters (`[a-z][a-z0-9_-]*`). */
// `string & {}` keeps editor completion for the known names.
export type BackendType = KnownBackendType | (string & {});

export const BACKEND_TYPE_PATTERN = /^[a-z][a-z0-9_-]{0,39}$/;

export const BackendTypeSchema: z.ZodType<BackendType, string> = z
  .string()
  .regex(
    BACKEND_TYPE_PATTERN,
    'Backend type must be a lowercase identifier ([a-z][a-z0-9_-]*) of at most 40 characters',
  );

export function isKnownBackendType(value: string): value is KnownBackendType {
  return (KNOWN_BACKEND_TYPES as readonly string[]).includes(value);
}

/**
 * The backend type as dstack's clients must see it. dstack's `BackendType` enum has no `local`:
 * its type for hosts that dstack does not provision itself is `remote`, so the server shows the
 * local backend (jobs on the server's own host) as `remote` on the wire, without changing what it
 * does. A client comparing what it sent with what the server echoes compares wire types.
 */
export function wireBackendType(type: string): string {
  return type === 'local' ? 'remote' : type;
}

/**
 * A `backends` filter as a client sent it, read back from the wire: `remote` (what the local
 * backend is shown as, see `wireBackendType`) also names `local`, so a run spec echoed from a plan
 * (`runs/apply` sends the plan's back) still reaches the backend its configuration named.
 */
export function fromWireBackendTypes<T extends readonly string[] | null | undefined>(backends: T): T {
  if (!backends?.includes('remote') || backends.includes('local')) return backends;
  return [...backends, 'local'] as unknown as T;
}
