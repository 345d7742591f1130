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

export interface ValidateConfigOptions {
  /**
   * Whether creds of type `default` (the server's own environment: instance
   * role, application default credentials) may be used; false when the server
   * runs with `DSTACK_DEFAULT_CREDS_DISABLED`.
   */
  defaultCredsEnabled: boolean;
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
   * invalid values, e.g. default creds when `defaultCredsEnabled` is false.
   * Makes only read-only provider calls.
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
