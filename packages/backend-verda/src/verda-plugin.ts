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
 * How long an instance may take from `createInstance` to a reachable agent before the server
 * gives up on it: dstack's default, 10 minutes, which it keeps for Verda.
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
