import { runpodBackendPlugin } from './runpod-plugin.js';

export default runpodBackendPlugin;
export {
  RunpodApi,
  type RunpodApiOptions,
  RunpodGraphqlError,
  type RunpodGraphqlErrorEntry,
} from './runpod-api.js';
export {
  cpuSizeLadder,
  RUNPOD_MIN_CUDA_VERSION,
  RunpodCatalogProvider,
  type RunpodCatalogProviderSettings,
  runpodCatalogProvider,
} from './runpod-catalog-provider.js';
export {
  createRunpodBackend,
  isRunpodSecureCloud,
  RUNPOD_CAPABILITIES,
  type RunpodBackendSettings,
  RunpodCompute,
  runpodPodName,
} from './runpod-compute.js';
export {
  RUNPOD_BACKEND_TYPE,
  RUNPOD_COMMUNITY_CLOUD_DEFAULT,
  RUNPOD_DEFAULT_ENDPOINT_URL,
  type RunpodBackendConfig,
  type RunpodBackendConfigWithCreds,
  type RunpodConfig,
  type RunpodCreds,
  type RunpodStoredConfig,
} from './runpod-config.js';
export { RunpodConfigurator } from './runpod-configurator.js';
export { runpodGpuName, runpodGpuVendor } from './runpod-gpu-names.js';
export { RUNPOD_PROVISIONING_TIMEOUT_SECONDS, runpodBackendPlugin } from './runpod-plugin.js';
export { VERSION } from './version.js';
