import {
  type BackendRecord,
  type Configurator,
  ServerClientError,
  type StoredBackendRecord,
} from '@dstack/core';
import { createLocalBackend, type LocalBackendSettings, type LocalCompute } from './local-compute.js';
import {
  DEFAULT_LOCAL_RUNTIME,
  LOCAL_RUNTIMES,
  type LocalBackendConfig,
  type LocalBackendConfigWithCreds,
  localConfigModels,
} from './local-config.js';

/** Settings of the local Computes that config.yml does not set. */
export type LocalComputeOverrides = Omit<LocalBackendSettings, 'runtime' | 'instancesDir' | 'volumesDir'>;

/**
 * Turns `backends: [{type: local}]` into a stored record and a `LocalCompute`.
 * There are no credentials and no provider: validation only checks the fields.
 */
export class LocalConfigurator implements Configurator<LocalBackendConfigWithCreds, LocalBackendConfig> {
  readonly type = 'local';
  readonly #settings: LocalComputeOverrides;

  /** `settings`: what every Compute it builds gets besides the config's fields (tests: the host's resources). */
  constructor(settings: LocalComputeOverrides = {}) {
    this.#settings = settings;
  }

  /**
   * Throws `ServerClientError` naming the field (`fields: [['runtime']]`) for a
   * value the schema rejects, e.g. an unknown runtime; callers that skipped the
   * schema get the same answer.
   */
  async validateConfig(config: LocalBackendConfigWithCreds): Promise<void> {
    const result = localConfigModels.backendConfigWithCreds.safeParse(config);
    if (result.success) return;
    const issue = result.error.issues[0];
    const path = (issue?.path ?? []).map(String);
    const field = path.join('.') || 'config';
    const detail =
      path[0] === 'runtime'
        ? `must be one of ${LOCAL_RUNTIMES.join(', ')}, got ${JSON.stringify((config as { runtime?: unknown }).runtime)}`
        : (issue?.message ?? 'is invalid');
    throw new ServerClientError(`Invalid local backend config: ${field} ${detail}`, {
      fields: [path.length > 0 ? path : ['config']],
    });
  }

  async createBackend(
    _projectName: string,
    configWithCreds: LocalBackendConfigWithCreds,
  ): Promise<BackendRecord> {
    const parsed = localConfigModels.backendConfigWithCreds.parse(configWithCreds);
    const { config, auth } = localConfigModels.splitCreds(parsed);
    const stored = { ...config, runtime: config.runtime ?? DEFAULT_LOCAL_RUNTIME };
    // Core types a config without stored-only fields as `& Record<string, never>`,
    // which no object with fields satisfies; toRecord validates at runtime anyway.
    return localConfigModels.toRecord(stored as Parameters<typeof localConfigModels.toRecord>[0], auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): LocalBackendConfigWithCreds {
    return localConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): LocalBackendConfig {
    return localConfigModels.configWithoutCredsFromRecord(record);
  }

  async getCompute(record: StoredBackendRecord): Promise<LocalCompute> {
    const config = localConfigModels.configFromRecord(record);
    return createLocalBackend({
      ...this.#settings,
      runtime: config.runtime,
      instancesDir: config.instances_dir,
      volumesDir: config.volumes_dir,
    });
  }
}
