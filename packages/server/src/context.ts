/**
 * What every service, route and pipeline of one server process shares.
 * Built once by `createServerApp` (app.ts).
 */
import type { Kysely } from 'kysely';
import type { BackendRegistry } from './backends/registry.js';
import type { DefaultPermissions } from './config/server-config.js';
import type { Database } from './db/schema.js';
import type { RouteDefinition } from './http/route.js';

export type SqlDialect = 'sqlite' | 'postgres';

/** Settings from the environment and command line (see settings.ts for defaults and variables). */
export interface ServerSettings {
  /** `DSTACK_SERVER_DIR`, default `~/.dstack/server`: config.yml, data/, local instances. */
  serverDir: string;
  /** `DSTACK_SERVER_HOST`, default `127.0.0.1`. */
  host: string;
  /** `DSTACK_SERVER_PORT`, default 8000; 0 picks a free port. */
  port: number;
  /** `DSTACK_DATABASE_URL`; unset means SQLite at `{serverDir}/data/sqlite.db`. */
  databaseUrl: string | null;
  /** `DSTACK_SERVER_ADMIN_TOKEN`: the admin token to use instead of a generated one. */
  adminToken: string | null;
  /** `DSTACK_SERVER_MAX_OFFERS_TRIED`, default 25. */
  maxOffersTried: number;
  /**
   * Whether backends may use creds of type `default` (the server's own environment);
   * false when `DSTACK_DEFAULT_CREDS_DISABLED` is set. Absent means true.
   */
  defaultCredsEnabled?: boolean;
}

/** Encrypts secrets at rest with the keys of config.yml (`enc:{aes|identity}:{key}:{ciphertext}`). */
export interface Encryption {
  encrypt(plaintext: string): string;
  /** Accepts any configured key's ciphertext, and plain text written before encryption was configured. */
  decrypt(stored: string): string;
  /**
   * What `encrypt` uses: the first AES key, or identity (values stored unencrypted) because
   * an identity key comes first (`configured`) or no key is configured.
   */
  readonly encryptingKey: { type: 'aes'; name: string } | { type: 'identity'; configured: boolean };
  /** The names of the configured AES keys: values under any of them decrypt. */
  readonly aesKeyNames: readonly string[];
}

export interface AppContext {
  db: Kysely<Database>;
  dialect: SqlDialect;
  settings: ServerSettings;
  encryption: Encryption;
  /** Identifies this process in lock columns: `host:pid:random`. */
  serverId: string;
  /** Aborted when the server stops. */
  signal: AbortSignal;
  /** Extension point filled by the assembly: pipelines, backend registry, agent connector. */
  services: AppServices;
  /** config.yml `default_permissions`; absent means dstack's defaults (non-admins may create projects). */
  defaultPermissions?: DefaultPermissions;
}

/**
 * Services the run machinery adds; declared here so routes can reach them
 * without import cycles. Filled in by app.ts.
 */
export interface AppServices {
  [name: string]: unknown;
  /** Project backends and their Computes; created on first use by `getBackendRegistry(app)`. */
  backendRegistry?: BackendRegistry;
  /** The routes the HTTP handler serves (set by `createHttpHandler`), for the OpenAPI document. */
  apiRoutes?: readonly RouteDefinition[];
}
