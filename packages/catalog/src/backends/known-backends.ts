/**
 * The one map of backend packages: every backend type the project knows, the
 * npm package that implements it and the kind of catalog provider that package
 * carries. The server's discovery (type → package), `dstack-catalog collect`
 * (offline providers → package) and the generated docs are all derived from
 * it, so they cannot disagree. A type may be listed before its package exists:
 * the server then says which package to install, and `pnpm plop backend`
 * creates the package without refusing the name.
 *
 * It lives in `@dstack/catalog` because the catalog does not depend on
 * `@dstack/core` and the server depends on the catalog. It imports nothing, so
 * tests and scripts can load the source file directly.
 *
 * `pnpm plop backend` keeps the entries: it parses and rewrites the lines
 * between the two `plop:known-backends` markers, so keep that block to object
 * literals of single-quoted string properties (comments elsewhere).
 */

/** How a backend's catalog provider gets offers: collected ahead of time into a CSV, or asked live. */
export type BackendCatalogKind = 'offline' | 'online';

export interface KnownBackend {
  /** The backend type: `type` of a `config.yml` backend and of the package's plugin descriptor. */
  readonly type: string;
  /** The npm package whose default export is the backend's plugin descriptor. */
  readonly packageName: string;
  /** The kind of the descriptor's `catalogProvider`; absent when the backend has none. */
  readonly catalog?: BackendCatalogKind;
  /**
   * gpuhunt's name for the catalog provider when it differs from the type (dstack's `lambda` is
   * gpuhunt's `lambdalabs`): the name `dstack-catalog collect` takes and the catalog's CSV is named by.
   */
  readonly catalogProvider?: string;
}

export const KNOWN_BACKENDS: readonly KnownBackend[] = Object.freeze([
  // plop:known-backends:begin — kept by `pnpm plop backend`; one entry per type, nothing else.
  { type: 'local', packageName: '@dstack/backend-local', catalog: 'online' },
  { type: 'aws', packageName: '@dstack/backend-aws', catalog: 'offline' },
  { type: 'gcp', packageName: '@dstack/backend-gcp', catalog: 'offline' },
  { type: 'vastai', packageName: '@dstack/backend-vastai', catalog: 'online' },
  { type: 'azure', packageName: '@dstack/backend-azure', catalog: 'offline' },
  {
    type: 'lambda',
    packageName: '@dstack/backend-lambda',
    catalog: 'offline',
    catalogProvider: 'lambdalabs',
  },
  { type: 'nebius', packageName: '@dstack/backend-nebius', catalog: 'offline' },
  { type: 'oci', packageName: '@dstack/backend-oci', catalog: 'offline' },
  { type: 'runpod', packageName: '@dstack/backend-runpod', catalog: 'offline' },
  { type: 'verda', packageName: '@dstack/backend-verda', catalog: 'offline' },
  { type: 'cloudrift', packageName: '@dstack/backend-cloudrift', catalog: 'offline' },
  { type: 'kubernetes', packageName: '@dstack/backend-kubernetes' },
  { type: 'slurm', packageName: '@dstack/backend-slurm' },
  // plop:known-backends:end
] satisfies KnownBackend[]);

/** Backend type → npm package, for the server's discovery. */
export const BACKEND_PACKAGES: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(KNOWN_BACKENDS.map(({ type, packageName }) => [type, packageName])),
);

/** The name a backend's catalog provider goes by (gpuhunt's, when it has its own). */
export function catalogProviderName(backend: KnownBackend): string {
  return backend.catalogProvider ?? backend.type;
}

/** Offline catalog provider name → the npm package that carries it, for `dstack-catalog collect`. */
export const OFFLINE_CATALOG_PACKAGES: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(
    KNOWN_BACKENDS.filter(({ catalog }) => catalog === 'offline').map((backend) => [
      catalogProviderName(backend),
      backend.packageName,
    ]),
  ),
);
