import { vastAiBackendPlugin } from './vastai-plugin.js';

export default vastAiBackendPlugin;
export {
  VastAiApi,
  type VastAiApiOptions,
  type VastAiInstance,
  type VastAiOffer,
  type VastAiRentBody,
} from './vastai-api.js';
export {
  VastAiCatalogProvider,
  type VastAiCatalogProviderSettings,
  vastAiCatalogProvider,
} from './vastai-catalog-provider.js';
export {
  createVastAiBackend,
  VAST_AI_CAPABILITIES,
  type VastAiBackendData,
  type VastAiBackendSettings,
  VastAiCompute,
} from './vastai-compute.js';
export {
  VAST_AI_BACKEND_TYPE,
  VAST_AI_DEFAULT_ENDPOINT_URL,
  type VastAiBackendConfig,
  type VastAiBackendConfigWithCreds,
  type VastAiConfig,
  type VastAiCreds,
  type VastAiStoredConfig,
} from './vastai-config.js';
export { VastAiConfigurator } from './vastai-configurator.js';
export { fromVastAiGpuName, toVastAiGpuNames } from './vastai-gpu-names.js';
export {
  buildSearchBody,
  offerToCatalogItems,
  satisfiesSearchBody,
  VAST_AI_QUALITY_FILTERS,
  type VastAiOfferData,
  vastAiLocation,
} from './vastai-offers.js';
export { VAST_AI_PROVISIONING_TIMEOUT_SECONDS, vastAiBackendPlugin } from './vastai-plugin.js';
export { VERSION } from './version.js';
