import { defineBackendPlugin } from '@dstack/core';
import { azureCatalogProvider } from './azure-catalog-provider.js';
import { AZURE_CAPABILITIES } from './azure-compute.js';
import {
  AZURE_BACKEND_TYPE,
  type AzureBackendConfig,
  type AzureBackendConfigWithCreds,
  azureConfigModels,
} from './azure-config.js';
import { AzureConfigurator } from './azure-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const AZURE_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The azure backend's plugin descriptor (contract v1); the package's default export. */
export const azureBackendPlugin = defineBackendPlugin<AzureBackendConfigWithCreds, AzureBackendConfig>({
  type: AZURE_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: AZURE_CAPABILITIES,
  configSchemas: azureConfigModels,
  createConfigurator: () => new AzureConfigurator(),
  catalogProvider: azureCatalogProvider,
  provisioningTimeoutSeconds: AZURE_PROVISIONING_TIMEOUT_SECONDS,
});
