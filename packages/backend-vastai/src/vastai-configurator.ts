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
import { VastAiApi } from './vastai-api.js';
import { createVastAiBackend, type VastAiCompute } from './vastai-compute.js';
import {
  VAST_AI_BACKEND_TYPE,
  VAST_AI_DEFAULT_ENDPOINT_URL,
  type VastAiBackendConfig,
  type VastAiBackendConfigWithCreds,
  type VastAiCreds,
  vastAiConfigModels,
} from './vastai-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid vastai backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseVastAiBackendConfig(config: unknown): VastAiBackendConfigWithCreds {
  const result = vastAiConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** The error for an API key Vast.ai refused, naming `creds.api_key`. */
export function invalidCredentials(_creds: VastAiCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds', 'api_key']], { cause });
}

/**
 * Turns `backends: [{type: vastai, ...}]` into a stored record and a
 * `VastAiCompute` (dstack's Configurator).
 */
export class VastAiConfigurator implements Configurator<VastAiBackendConfigWithCreds, VastAiBackendConfig> {
  readonly type = VAST_AI_BACKEND_TYPE;
  readonly #dispatcher: Dispatcher | undefined;

  /** `dispatcher`: where API calls go (tests); default undici's global dispatcher. */
  constructor(options: { dispatcher?: Dispatcher } = {}) {
    this.#dispatcher = options.dispatcher;
  }

  /**
   * Checks the key with one read-only call (`GET /users/current/`): a 401/403 is
   * `InvalidCredentialsError` naming `creds.api_key`; other failures (network, 5xx) propagate,
   * and the call stops at `options.signal`. An `endpoint_url` other than Vast.ai's is refused
   * unless `options.customEndpointsAllowed`, before the call.
   */
  async validateConfig(config: VastAiBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseVastAiBackendConfig(config);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [VAST_AI_DEFAULT_ENDPOINT_URL],
    });
    const api = new VastAiApi({
      endpointUrl: parsed.endpoint_url ?? VAST_AI_DEFAULT_ENDPOINT_URL,
      apiKey: parsed.creds.api_key,
      dispatcher: this.#dispatcher,
    });
    const { user } = await api.currentUser(options.signal);
    if (user === null) throw invalidCredentials(parsed.creds);
  }

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: VastAiBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = vastAiConfigModels.splitCreds(parseVastAiBackendConfig(config));
    return vastAiConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): VastAiBackendConfigWithCreds {
    return vastAiConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): VastAiBackendConfig {
    return vastAiConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<VastAiCompute> {
    return createVastAiBackend({
      config: vastAiConfigModels.configFromRecord(record),
      dispatcher: this.#dispatcher,
    });
  }
}
