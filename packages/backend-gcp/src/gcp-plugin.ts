import { defineBackendPlugin } from '@dstack/core';
import { gcpCatalogProvider } from './gcp-catalog-provider.js';
import { GCP_CAPABILITIES } from './gcp-compute.js';
import {
  GCP_BACKEND_TYPE,
  type GcpBackendConfig,
  type GcpBackendConfigWithCreds,
  gcpConfigModels,
} from './gcp-config.js';
import { GcpConfigurator } from './gcp-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const GCP_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The gcp backend's plugin descriptor (contract v1); the package's default export. */
export const gcpBackendPlugin = defineBackendPlugin<GcpBackendConfigWithCreds, GcpBackendConfig>({
  type: GCP_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: GCP_CAPABILITIES,
  configSchemas: gcpConfigModels,
  createConfigurator: () => new GcpConfigurator(),
  catalogProvider: gcpCatalogProvider,
  provisioningTimeoutSeconds: GCP_PROVISIONING_TIMEOUT_SECONDS,
});
