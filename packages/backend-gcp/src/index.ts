import { gcpBackendPlugin } from './gcp-plugin.js';

export default gcpBackendPlugin;
export {
  GCP_BILLING_URL_ENV,
  GCP_COMPUTE_URL_ENV,
  GCP_PROJECT_ID_ENV,
  GcpCatalogProvider,
  type GcpCatalogProviderOptions,
} from './gcp-catalog-provider.js';
export {
  createGcpBackend,
  GCP_CAPABILITIES,
  type GcpBackendSettings,
  GcpCompute,
} from './gcp-compute.js';
export {
  GCP_BACKEND_TYPE,
  GCP_COMPUTE_URL,
  type GcpBackendConfig,
  type GcpBackendConfigWithCreds,
  type GcpConfig,
  type GcpCreds,
  type GcpStoredConfig,
} from './gcp-config.js';
export { GcpConfigurator } from './gcp-configurator.js';
export type { GcpBackendData } from './gcp-launch.js';
export { GCP_PROVISIONING_TIMEOUT_SECONDS, gcpBackendPlugin } from './gcp-plugin.js';
export { GcpApiCallError } from './gcp-rest.js';
export { VERSION } from './version.js';
