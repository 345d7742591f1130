import { verdaBackendPlugin } from './verda-plugin.js';

export default verdaBackendPlugin;
export {
  VERDA_DEFAULT_ENDPOINT_URL,
  VerdaApi,
  type VerdaApiOptions,
  type VerdaInstance,
  type VerdaInstanceType,
} from './verda-api.js';
export {
  VerdaCatalogProvider,
  type VerdaCatalogProviderSettings,
  verdaGpuName,
} from './verda-catalog-provider.js';
export {
  createVerdaBackend,
  VERDA_CAPABILITIES,
  type VerdaBackendSettings,
  VerdaCompute,
  verdaImageId,
} from './verda-compute.js';
export {
  VERDA_BACKEND_TYPE,
  type VerdaBackendConfig,
  type VerdaBackendConfigWithCreds,
  type VerdaConfig,
  type VerdaCreds,
  type VerdaStoredConfig,
} from './verda-config.js';
export { VerdaConfigurator } from './verda-configurator.js';
export { VERDA_PROVISIONING_TIMEOUT_SECONDS, verdaBackendPlugin } from './verda-plugin.js';
export { VERSION } from './version.js';
