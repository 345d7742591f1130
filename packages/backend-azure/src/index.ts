import { azureBackendPlugin } from './azure-plugin.js';

export default azureBackendPlugin;
export { AzureCatalogProvider } from './azure-catalog-provider.js';
export {
  AZURE_CAPABILITIES,
  type AzureBackendSettings,
  AzureCompute,
  createAzureBackend,
} from './azure-compute.js';
export {
  AZURE_BACKEND_TYPE,
  type AzureBackendConfig,
  type AzureBackendConfigWithCreds,
  type AzureConfig,
  type AzureCreds,
  type AzureStoredConfig,
} from './azure-config.js';
export { AzureConfigurator } from './azure-configurator.js';
export { AZURE_PROVISIONING_TIMEOUT_SECONDS, azureBackendPlugin } from './azure-plugin.js';
export { VERSION } from './version.js';
