import { localBackendPlugin } from './local-plugin.js';

export default localBackendPlugin;
export {
  type DetectHostResourcesOptions,
  detectHostResources,
  type HostGpu,
  type HostResources,
  normalizeNvidiaGpuName,
  parseNvidiaSmiGpus,
} from './host-resources.js';
export {
  LocalCatalogProvider,
  type LocalCatalogProviderSettings,
  localCatalogProvider,
} from './local-catalog-provider.js';
export {
  createLocalBackend,
  LOCAL_CAPABILITIES,
  LOCAL_HOSTNAME,
  type LocalBackendData,
  type LocalBackendSettings,
  LocalCompute,
} from './local-compute.js';
export {
  DEFAULT_LOCAL_RUNTIME,
  defaultInstancesDir,
  defaultVolumesDir,
  LOCAL_RUNTIMES,
  type LocalBackendConfig,
  type LocalBackendConfigWithCreds,
  type LocalConfig,
  type LocalRuntime,
} from './local-config.js';
export { type LocalComputeOverrides, LocalConfigurator } from './local-configurator.js';
export {
  explainOfferMismatch,
  getLocalOffers,
  hostCatalogItem,
  LOCAL_BACKEND_TYPE,
  LOCAL_INSTANCE_TYPE_NAME,
  LOCAL_REGION,
} from './local-offers.js';
export {
  createLocalBackendPlugin,
  LOCAL_PROVISIONING_TIMEOUT_SECONDS,
  localBackendPlugin,
} from './local-plugin.js';
export { VERSION } from './version.js';
