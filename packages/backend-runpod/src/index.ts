import { runpodBackendPlugin } from './runpod-plugin.js';

export default runpodBackendPlugin;
export { RunpodCatalogProvider } from './runpod-catalog-provider.js';
export {
  createRunpodBackend,
  RUNPOD_CAPABILITIES,
  type RunpodBackendSettings,
  RunpodCompute,
} from './runpod-compute.js';
export {
  RUNPOD_BACKEND_TYPE,
  type RunpodBackendConfig,
  type RunpodBackendConfigWithCreds,
  type RunpodConfig,
  type RunpodCreds,
  type RunpodStoredConfig,
} from './runpod-config.js';
export { RunpodConfigurator } from './runpod-configurator.js';
export { RUNPOD_PROVISIONING_TIMEOUT_SECONDS, runpodBackendPlugin } from './runpod-plugin.js';
export { VERSION } from './version.js';
