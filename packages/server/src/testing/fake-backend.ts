/**
 * An in-memory backend plugin for tests and benchmarks: register it with
 * `BackendRegistry.registerPlugin`. Its creds are `{type: api_key, api_key}`;
 * `validateConfig` accepts only `FAKE_BACKEND_VALID_API_KEY`. The Compute has
 * no offers unless `createCompute` supplies one.
 */
import {
  type BackendPlugin,
  type Compute,
  defineBackendConfigModels,
  defineBackendPlugin,
  InvalidCredentialsError,
  NotImplementedError,
  type StoredBackendRecord,
} from '@dstack/core';
import { z } from 'zod';

export const FAKE_BACKEND_VALID_API_KEY = 'valid-key';

export const fakeBackendConfigModels = defineBackendConfigModels({
  type: 'fake',
  configFields: { regions: z.array(z.string()).nullish() },
  credsSchemas: { api_key: { api_key: z.string().min(1) } },
  storedExtra: { project_name: z.string() },
});

export type FakeBackendConfig = z.output<typeof fakeBackendConfigModels.config>;
type FakeConfigWithCreds = z.output<typeof fakeBackendConfigModels.backendConfigWithCreds>;

export interface FakeBackendOptions {
  /** Builds the Compute from the stored config with creds; default: a Compute without offers. */
  createCompute?: (config: FakeBackendConfig) => Compute;
}

function emptyCompute(): Compute {
  return {
    type: 'fake',
    capabilities: [],
    getOffers: async () => [],
    runJob: async () => {
      throw new NotImplementedError('FakeCompute.runJob');
    },
    terminateInstance: async () => {},
    updateProvisioningData: async (data) => data,
  };
}

/** The `fake` backend plugin (type "fake", computeKind "vm", no capabilities). */
export function createFakeBackendPlugin(options: FakeBackendOptions = {}): BackendPlugin {
  const createCompute = options.createCompute ?? emptyCompute;
  return defineBackendPlugin<FakeConfigWithCreds, unknown>({
    type: 'fake',
    computeKind: 'vm',
    capabilities: [],
    configSchemas: fakeBackendConfigModels,
    createConfigurator: () => ({
      type: 'fake',
      async validateConfig(config) {
        if (config.creds.api_key !== FAKE_BACKEND_VALID_API_KEY) {
          throw new InvalidCredentialsError([['creds', 'api_key']]);
        }
      },
      async createBackend(projectName, configWithCreds) {
        const { config, auth } = fakeBackendConfigModels.splitCreds(configWithCreds);
        return fakeBackendConfigModels.toRecord(
          { ...config, regions: config.regions ?? ['fake-region-1'], project_name: projectName },
          auth,
        );
      },
      getBackendConfigWithCreds: (record: StoredBackendRecord) =>
        fakeBackendConfigModels.configWithCredsFromRecord(record),
      getBackendConfigWithoutCreds: (record: StoredBackendRecord) =>
        fakeBackendConfigModels.configWithoutCredsFromRecord(record),
      async getCompute(record: StoredBackendRecord) {
        return createCompute(fakeBackendConfigModels.configFromRecord(record));
      },
    }),
  }) as BackendPlugin;
}
