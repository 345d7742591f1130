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
import { createKubernetesBackend, type KubernetesCompute } from './kubernetes-compute.js';
import {
  KUBERNETES_BACKEND_TYPE,
  type KubernetesBackendConfig,
  type KubernetesBackendConfigWithCreds,
  type KubernetesCreds,
  kubernetesConfigModels,
} from './kubernetes-config.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid kubernetes backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseKubernetesBackendConfig(config: unknown): KubernetesBackendConfigWithCreds {
  const result = kubernetesConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/**
 * Refuses creds of type `default` (the server's own identity at the provider) when they are not
 * enabled for this config (`DSTACK_DEFAULT_CREDS_DISABLED`, or an API request without
 * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`), naming `creds.type`.
 */
export function refuseDisabledDefaultCreds(
  creds: KubernetesCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'api_key');
}

/**
 * The error for credentials the provider refused, naming the field the user
 * must fix: `creds.api_key` for an API key, `creds.type` when the server's
 * own environment has no usable credentials.
 */
export function invalidCredentials(creds: KubernetesCreds, cause?: unknown): InvalidCredentialsError {
  const field = creds.type === 'api_key' ? ['creds', 'api_key'] : ['creds', 'type'];
  return new InvalidCredentialsError([field], { cause });
}

/**
 * Turns `backends: [{type: kubernetes, ...}]` into a stored record and a
 * `KubernetesCompute` (dstack's Configurator).
 */
export class KubernetesConfigurator
  implements Configurator<KubernetesBackendConfigWithCreds, KubernetesBackendConfig>
{
  readonly type = KUBERNETES_BACKEND_TYPE;

  /**
   * Checks the config against the provider. THE PROVIDER CALL GOES HERE:
   * replace this stub with a method that makes one read-only call with the
   * creds (e.g. list regions) and maps the provider's refusal to
   * `InvalidCredentialsError` naming the field:
   *
   * ```ts
   * async validateConfig(config: KubernetesBackendConfigWithCreds, options: ValidateConfigOptions) {
   *   const { creds } = parseKubernetesBackendConfig(config);
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
  validateConfig = notImplemented<Configurator<KubernetesBackendConfigWithCreds>['validateConfig']>(
    'KubernetesConfigurator.validateConfig',
    'must check the creds with a read-only kubernetes API call and throw invalidCredentials(creds) (InvalidCredentialsError naming creds.api_key) when the provider refuses them',
  );

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(
    _projectName: string,
    config: KubernetesBackendConfigWithCreds,
  ): Promise<BackendRecord> {
    const { config: stored, auth } = kubernetesConfigModels.splitCreds(parseKubernetesBackendConfig(config));
    return kubernetesConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): KubernetesBackendConfigWithCreds {
    return kubernetesConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): KubernetesBackendConfig {
    return kubernetesConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<KubernetesCompute> {
    return createKubernetesBackend({ config: kubernetesConfigModels.configFromRecord(record) });
  }
}
