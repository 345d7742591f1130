import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  notImplemented,
  refuseDefaultCreds,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { createRunpodBackend, type RunpodCompute } from './runpod-compute.js';
import {
  RUNPOD_BACKEND_TYPE,
  type RunpodBackendConfig,
  type RunpodBackendConfigWithCreds,
  type RunpodCreds,
  runpodConfigModels,
} from './runpod-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid runpod backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseRunpodBackendConfig(config: unknown): RunpodBackendConfigWithCreds {
  const result = runpodConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/**
 * Refuses creds of type `default` (the server's own identity at the provider) when they are not
 * enabled for this config (`DSTACK_DEFAULT_CREDS_DISABLED`, or an API request without
 * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`), naming `creds.type`.
 */
export function refuseDisabledDefaultCreds(
  creds: RunpodCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'api_key');
}

/**
 * The error for credentials the provider refused, naming the field the user
 * must fix: `creds.api_key` for an API key, `creds.type` when the server's
 * own environment has no usable credentials.
 */
export function invalidCredentials(creds: RunpodCreds, cause?: unknown): InvalidCredentialsError {
  const field = creds.type === 'api_key' ? ['creds', 'api_key'] : ['creds', 'type'];
  return new InvalidCredentialsError([field], { cause });
}

/**
 * Turns `backends: [{type: runpod, ...}]` into a stored record and a
 * `RunpodCompute` (dstack's Configurator).
 */
export class RunpodConfigurator implements Configurator<RunpodBackendConfigWithCreds, RunpodBackendConfig> {
  readonly type = RUNPOD_BACKEND_TYPE;

  /**
   * Checks the config against the provider. THE PROVIDER CALL GOES HERE:
   * replace this stub with a method that makes one read-only call with the
   * creds (e.g. list regions) and maps the provider's refusal to
   * `InvalidCredentialsError` naming the field:
   *
   * ```ts
   * async validateConfig(config: RunpodBackendConfigWithCreds, options: ValidateConfigOptions) {
   *   const { creds } = parseRunpodBackendConfig(config);
   *   refuseDisabledDefaultCreds(creds, options);
   *   // A field that points the backend at another endpoint than the provider's (`endpoint_url`)
   *   // or names a file on the server: refuseCustomEndpoint / refuseServerFileFromApi (@dstack/core).
   *   const response = await client.listRegions(creds, { signal: options.signal });
   *   if (response.status === 401 || response.status === 403) throw invalidCredentials(creds);
   * }
   * ```
   *
   * Other failures (network, 5xx) are not a credentials problem: let them
   * propagate, or wrap them in `BackendApiCallError`. Until then the
   * conformance suite reports its invalid-credentials check as todo.
   */
  validateConfig = notImplemented<Configurator<RunpodBackendConfigWithCreds>['validateConfig']>(
    'RunpodConfigurator.validateConfig',
    'must check the creds with a read-only runpod API call and throw invalidCredentials(creds) (InvalidCredentialsError naming creds.api_key) when the provider refuses them',
  );

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: RunpodBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = runpodConfigModels.splitCreds(parseRunpodBackendConfig(config));
    return runpodConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): RunpodBackendConfigWithCreds {
    return runpodConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): RunpodBackendConfig {
    return runpodConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<RunpodCompute> {
    return createRunpodBackend({ config: runpodConfigModels.configFromRecord(record) });
  }
}
