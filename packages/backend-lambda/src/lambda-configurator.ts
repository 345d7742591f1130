import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { LAMBDA_DEFAULT_ENDPOINT_URL, LambdaApi } from './lambda-api.js';
import { createLambdaBackend, type LambdaCompute } from './lambda-compute.js';
import {
  LAMBDA_BACKEND_TYPE,
  type LambdaBackendConfig,
  type LambdaBackendConfigWithCreds,
  type LambdaCreds,
  lambdaConfigModels,
} from './lambda-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid lambda backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseLambdaBackendConfig(config: unknown): LambdaBackendConfigWithCreds {
  const result = lambdaConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** The error for an API key Lambda refused, naming `creds.api_key`. */
export function invalidCredentials(_creds: LambdaCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds', 'api_key']], { cause });
}

/**
 * Turns `backends: [{type: lambda, ...}]` into a stored record and a
 * `LambdaCompute` (dstack's Configurator).
 */
export class LambdaConfigurator implements Configurator<LambdaBackendConfigWithCreds, LambdaBackendConfig> {
  readonly type = LAMBDA_BACKEND_TYPE;
  readonly #dispatcher: Dispatcher | undefined;

  /** `dispatcher`: where API calls go (tests); default undici's global dispatcher. */
  constructor(options: { dispatcher?: Dispatcher } = {}) {
    this.#dispatcher = options.dispatcher;
  }

  /**
   * Checks the key with one read-only call (`GET /instance-types`, as dstack): 401/403 is
   * `InvalidCredentialsError` naming `creds.api_key`; other failures propagate. An `endpoint_url`
   * other than Lambda's is refused unless `options.customEndpointsAllowed`, before the call.
   */
  async validateConfig(config: LambdaBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseLambdaBackendConfig(config);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [LAMBDA_DEFAULT_ENDPOINT_URL],
    });
    const api = new LambdaApi({
      endpointUrl: parsed.endpoint_url ?? undefined,
      apiKey: parsed.creds.api_key,
      dispatcher: this.#dispatcher,
    });
    if (!(await api.acceptsKey(options.signal))) throw invalidCredentials(parsed.creds);
  }

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: LambdaBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = lambdaConfigModels.splitCreds(parseLambdaBackendConfig(config));
    return lambdaConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): LambdaBackendConfigWithCreds {
    return lambdaConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): LambdaBackendConfig {
    return lambdaConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<LambdaCompute> {
    return createLambdaBackend({
      config: lambdaConfigModels.configFromRecord(record),
      dispatcher: this.#dispatcher,
    });
  }
}
