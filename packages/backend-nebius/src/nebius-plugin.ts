import { defineBackendPlugin } from '@dstack/core';
import { nebiusCatalogProvider } from './nebius-catalog-provider.js';
import { NEBIUS_CAPABILITIES } from './nebius-compute.js';
import {
  NEBIUS_BACKEND_TYPE,
  type NebiusBackendConfig,
  type NebiusBackendConfigWithCreds,
  nebiusConfigModels,
} from './nebius-config.js';
import { NebiusConfigurator } from './nebius-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const NEBIUS_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The nebius backend's plugin descriptor (contract v1); the package's default export. */
export const nebiusBackendPlugin = defineBackendPlugin<NebiusBackendConfigWithCreds, NebiusBackendConfig>({
  type: NEBIUS_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: NEBIUS_CAPABILITIES,
  configSchemas: nebiusConfigModels,
  createConfigurator: () => new NebiusConfigurator(),
  catalogProvider: nebiusCatalogProvider,
  provisioningTimeoutSeconds: NEBIUS_PROVISIONING_TIMEOUT_SECONDS,
});
