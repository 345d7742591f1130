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
import { VERDA_DEFAULT_ENDPOINT_URL, VerdaApi } from './verda-api.js';
import { createVerdaBackend, type VerdaCompute } from './verda-compute.js';
import {
  VERDA_BACKEND_TYPE,
  type VerdaBackendConfig,
  type VerdaBackendConfigWithCreds,
  type VerdaCreds,
  verdaConfigModels,
} from './verda-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid verda backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseVerdaBackendConfig(config: unknown): VerdaBackendConfigWithCreds {
  const result = verdaConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** The error for client credentials Verda refused, naming both fields. */
export function invalidCredentials(_creds: VerdaCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError(
    [
      ['creds', 'client_id'],
      ['creds', 'client_secret'],
    ],
    { cause },
  );
}

/**
 * Turns `backends: [{type: verda, ...}]` into a stored record and a
 * `VerdaCompute` (dstack's Configurator).
 */
export class VerdaConfigurator implements Configurator<VerdaBackendConfigWithCreds, VerdaBackendConfig> {
  readonly type = VERDA_BACKEND_TYPE;
  readonly #dispatcher: Dispatcher | undefined;

  /** `dispatcher`: where API calls go (tests); default undici's global dispatcher. */
  constructor(options: { dispatcher?: Dispatcher } = {}) {
    this.#dispatcher = options.dispatcher;
  }

  /**
   * Checks the client credentials with Verda's token endpoint (as the SDK authenticates): a refusal
   * (400/401) is `InvalidCredentialsError` naming `creds.client_id` and `creds.client_secret`; other
   * failures propagate. An `endpoint_url` other than Verda's is refused unless
   * `options.customEndpointsAllowed`, before the call.
   */
  async validateConfig(config: VerdaBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseVerdaBackendConfig(config);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [VERDA_DEFAULT_ENDPOINT_URL],
    });
    const api = new VerdaApi({
      endpointUrl: parsed.endpoint_url ?? undefined,
      clientId: parsed.creds.client_id,
      clientSecret: parsed.creds.client_secret,
      dispatcher: this.#dispatcher,
    });
    if (!(await api.acceptsCredentials(options.signal))) throw invalidCredentials(parsed.creds);
  }

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: VerdaBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = verdaConfigModels.splitCreds(parseVerdaBackendConfig(config));
    return verdaConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): VerdaBackendConfigWithCreds {
    return verdaConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): VerdaBackendConfig {
    return verdaConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<VerdaCompute> {
    return createVerdaBackend({
      config: verdaConfigModels.configFromRecord(record),
      dispatcher: this.#dispatcher,
    });
  }
}
