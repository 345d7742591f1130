import { nebiusBackendPlugin } from './nebius-plugin.js';

export default nebiusBackendPlugin;
export { NebiusCatalogProvider } from './nebius-catalog-provider.js';
export {
  createNebiusBackend,
  NEBIUS_CAPABILITIES,
  type NebiusBackendSettings,
  NebiusCompute,
} from './nebius-compute.js';
export {
  NEBIUS_BACKEND_TYPE,
  type NebiusBackendConfig,
  type NebiusBackendConfigWithCreds,
  type NebiusConfig,
  type NebiusCreds,
  type NebiusStoredConfig,
} from './nebius-config.js';
export { NebiusConfigurator } from './nebius-configurator.js';
export { NEBIUS_PROVISIONING_TIMEOUT_SECONDS, nebiusBackendPlugin } from './nebius-plugin.js';
export { VERSION } from './version.js';
