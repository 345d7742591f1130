import {
  BackendApiCallError,
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
import { RunpodApi } from './runpod-api.js';
import { createRunpodBackend, type RunpodCompute } from './runpod-compute.js';
import {
  RUNPOD_BACKEND_TYPE,
  RUNPOD_DEFAULT_ENDPOINT_URL,
  type RunpodBackendConfig,
  type RunpodBackendConfigWithCreds,
  type RunpodCreds,
  runpodConfigModels,
} from './runpod-config.js';
import { MYSELF_QUERY } from './runpod-queries.js';

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

/** The error for an API key RunPod refused, naming `creds.api_key`. */
export function invalidCredentials(_creds: RunpodCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds', 'api_key']], { cause });
}

/**
 * Turns `backends: [{type: runpod, ...}]` into a stored record and a
 * `RunpodCompute` (dstack's Configurator).
 */
export class RunpodConfigurator implements Configurator<RunpodBackendConfigWithCreds, RunpodBackendConfig> {
  readonly type = RUNPOD_BACKEND_TYPE;
  readonly #dispatcher: Dispatcher | undefined;

  /** `dispatcher`: where API calls go (tests); default undici's global dispatcher. */
  constructor(options: { dispatcher?: Dispatcher } = {}) {
    this.#dispatcher = options.dispatcher;
  }

  /**
   * Checks the key with one read-only call (dstack's `myself` query): a 401/403 is
   * `InvalidCredentialsError` naming `creds.api_key`; other failures (network, 5xx) propagate, and
   * the call stops at `options.signal`. An `endpoint_url` other than RunPod's is refused unless
   * `options.customEndpointsAllowed`, before the call.
   */
  async validateConfig(config: RunpodBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseRunpodBackendConfig(config);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [RUNPOD_DEFAULT_ENDPOINT_URL],
    });
    const api = new RunpodApi({
      endpointUrl: parsed.endpoint_url ?? RUNPOD_DEFAULT_ENDPOINT_URL,
      apiKey: parsed.creds.api_key,
      dispatcher: this.#dispatcher,
      timeoutMs: 10_000,
    });
    try {
      await api.graphql('myself', MYSELF_QUERY, {}, options.signal);
    } catch (error) {
      if (BackendApiCallError.isInstance(error) && (error.statusCode === 401 || error.statusCode === 403)) {
        throw invalidCredentials(parsed.creds, error);
      }
      throw error;
    }
  }

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
    return createRunpodBackend({
      config: runpodConfigModels.configFromRecord(record),
      dispatcher: this.#dispatcher,
    });
  }
}
