import type { BackendType } from '../models/backend-type.js';
import type { Compute } from './compute.js';

/**
 * What the server stores for a backend: the non-secret config and the
 * credentials, each as a JSON string. The server encrypts `auth`; the
 * configurator never does.
 */
export interface BackendRecord {
  /** JSON of the stored config (`XStoredConfig`), without creds. */
  config: string;
  /** JSON of the creds (`XCreds`). */
  auth: string;
}

/** A `BackendRecord` as read back from the database (`auth` already decrypted). */
export interface StoredBackendRecord extends BackendRecord {
  projectId: string;
  backendId: string;
}

/**
 * Where a backend config came from: `server_config`, the server's `config.yml` (the server
 * admin's own file: it may name files on the server and custom endpoints), or `api`, a
 * `backends/create|update` request of any project admin (it may do neither unless the server
 * allows it; see `config-origin.ts`).
 */
export type BackendConfigOrigin = 'server_config' | 'api';

export interface ValidateConfigOptions {
  /** Where the config came from; decides what it may reach on the server's behalf. */
  origin: BackendConfigOrigin;
  /**
   * Whether creds of type `default` (the server's own cloud identity: instance role,
   * application default credentials) may be used. The server allows them in `config.yml` unless
   * `DSTACK_DEFAULT_CREDS_DISABLED`, and in API requests only with `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`.
   */
  defaultCredsEnabled: boolean;
  /**
   * Whether the config may point the backend somewhere other than the provider's own endpoints
   * (`endpoint_url`, a key's `token_uri`). True for `config.yml`; in API requests only with
   * `DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS`.
   */
  customEndpointsAllowed: boolean;
  /** Aborted when the validation's deadline passes: provider calls should stop then. */
  signal?: AbortSignal;
}

/**
 * Turns user backend configs into stored records and stored records into a
 * Compute (dstack's `Configurator`). `TConfigWithCreds` is the type of
 * `configSchemas.backendConfigWithCreds`, `TConfigWithoutCreds` of
 * `configSchemas.backendConfig`.
 */
export interface Configurator<TConfigWithCreds = unknown, TConfigWithoutCreds = unknown> {
  readonly type: BackendType;

  /**
   * Checks the config against the provider: that the creds authenticate and
   * that referenced resources exist (VPC, project, IAM profile, regions).
   * The config is already schema-valid. Throws `InvalidCredentialsError` naming
   * the bad fields (`[['creds', 'api_key']]`), or `ServerClientError` for other
   * invalid values, e.g. default creds when `defaultCredsEnabled` is false, a custom
   * endpoint when `customEndpointsAllowed` is false, or a file on the server when `origin` is
   * `api` (refused before anything is read or called; see `config-origin.ts`). Error messages
   * never quote creds or file content. Makes only read-only provider calls.
   */
  validateConfig(config: TConfigWithCreds, options: ValidateConfigOptions): Promise<void>;

  /**
   * Builds the record to store: fills defaults (e.g. `regions` = all default
   * regions) and may create long-lived cloud resources the backend needs
   * (idempotently: the same project may be configured again). Called after
   * `validateConfig`.
   */
  createBackend(projectName: string, config: TConfigWithCreds): Promise<BackendRecord>;

  /** The user-facing config with creds, from a stored record (for editing). Pure; no provider calls. */
  getBackendConfigWithCreds(record: StoredBackendRecord): TConfigWithCreds;

  /** The user-facing config without creds, from a stored record (for the API). Pure; no provider calls. */
  getBackendConfigWithoutCreds(record: StoredBackendRecord): TConfigWithoutCreds;

  /**
   * The Compute for a stored record. Must not call the provider (it runs on
   * every server request that needs the backend); clients are created lazily.
   */
  getCompute(record: StoredBackendRecord): Promise<Compute>;
}
