import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  notImplemented,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { type AwsCompute, createAwsBackend } from './aws-compute.js';
import {
  AWS_BACKEND_TYPE,
  type AwsBackendConfig,
  type AwsBackendConfigWithCreds,
  type AwsCreds,
  awsConfigModels,
} from './aws-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid aws backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseAwsBackendConfig(config: unknown): AwsBackendConfigWithCreds {
  const result = awsConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** Refuses creds of type `default` when the server runs with `DSTACK_DEFAULT_CREDS_DISABLED`, naming `creds.type`. */
export function refuseDisabledDefaultCreds(creds: AwsCreds, options: ValidateConfigOptions): void {
  if (creds.type === 'default' && !options.defaultCredsEnabled) {
    throw new ServerClientError(
      'Default credentials are disabled on this server (DSTACK_DEFAULT_CREDS_DISABLED): give creds of type api_key',
      { fields: [['creds', 'type']] },
    );
  }
}

/**
 * The error for credentials the provider refused, naming the field the user
 * must fix: `creds.api_key` for an API key, `creds.type` when the server's
 * own environment has no usable credentials.
 */
export function invalidCredentials(creds: AwsCreds, cause?: unknown): InvalidCredentialsError {
  const field = creds.type === 'api_key' ? ['creds', 'api_key'] : ['creds', 'type'];
  return new InvalidCredentialsError([field], { cause });
}

/**
 * Turns `backends: [{type: aws, ...}]` into a stored record and a
 * `AwsCompute` (dstack's Configurator).
 */
export class AwsConfigurator implements Configurator<AwsBackendConfigWithCreds, AwsBackendConfig> {
  readonly type = AWS_BACKEND_TYPE;

  /**
   * Checks the config against the provider. THE PROVIDER CALL GOES HERE:
   * replace this stub with a method that makes one read-only call with the
   * creds (e.g. list regions) and maps the provider's refusal to
   * `InvalidCredentialsError` naming the field:
   *
   * ```ts
   * async validateConfig(config: AwsBackendConfigWithCreds, options: ValidateConfigOptions) {
   *   const { creds } = parseAwsBackendConfig(config);
   *   refuseDisabledDefaultCreds(creds, options);
   *   const response = await client.listRegions(creds);
   *   if (response.status === 401 || response.status === 403) throw invalidCredentials(creds);
   * }
   * ```
   *
   * Other failures (network, 5xx) are not a credentials problem: let them
   * propagate, or wrap them in `BackendApiCallError`. Until then the
   * conformance suite reports its invalid-credentials check as todo.
   */
  validateConfig = notImplemented<Configurator<AwsBackendConfigWithCreds>['validateConfig']>(
    'AwsConfigurator.validateConfig',
    'must check the creds with a read-only aws API call and throw invalidCredentials(creds) (InvalidCredentialsError naming creds.api_key) when the provider refuses them',
  );

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: AwsBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = awsConfigModels.splitCreds(parseAwsBackendConfig(config));
    return awsConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): AwsBackendConfigWithCreds {
    return awsConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): AwsBackendConfig {
    return awsConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<AwsCompute> {
    return createAwsBackend({ config: awsConfigModels.configFromRecord(record) });
  }
}
