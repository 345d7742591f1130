import { defineBackendPlugin } from '@dstack/core';
import { verdaCatalogProvider } from './verda-catalog-provider.js';
import { VERDA_CAPABILITIES } from './verda-compute.js';
import {
  VERDA_BACKEND_TYPE,
  type VerdaBackendConfig,
  type VerdaBackendConfigWithCreds,
  verdaConfigModels,
} from './verda-config.js';
import { VerdaConfigurator } from './verda-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const VERDA_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The verda backend's plugin descriptor (contract v1); the package's default export. */
export const verdaBackendPlugin = defineBackendPlugin<VerdaBackendConfigWithCreds, VerdaBackendConfig>({
  type: VERDA_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: VERDA_CAPABILITIES,
  configSchemas: verdaConfigModels,
  createConfigurator: () => new VerdaConfigurator(),
  catalogProvider: verdaCatalogProvider,
  provisioningTimeoutSeconds: VERDA_PROVISIONING_TIMEOUT_SECONDS,
});
