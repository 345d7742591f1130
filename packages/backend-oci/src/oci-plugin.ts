import { defineBackendPlugin } from '@dstack/core';
import { ociCatalogProvider } from './oci-catalog-provider.js';
import { OCI_CAPABILITIES } from './oci-compute.js';
import {
  OCI_BACKEND_TYPE,
  type OciBackendConfig,
  type OciBackendConfigWithCreds,
  ociConfigModels,
} from './oci-config.js';
import { OciConfigurator } from './oci-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const OCI_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The oci backend's plugin descriptor (contract v1); the package's default export. */
export const ociBackendPlugin = defineBackendPlugin<OciBackendConfigWithCreds, OciBackendConfig>({
  type: OCI_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: OCI_CAPABILITIES,
  configSchemas: ociConfigModels,
  createConfigurator: () => new OciConfigurator(),
  catalogProvider: ociCatalogProvider,
  provisioningTimeoutSeconds: OCI_PROVISIONING_TIMEOUT_SECONDS,
});
