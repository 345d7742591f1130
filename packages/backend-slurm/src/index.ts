import { slurmBackendPlugin } from './slurm-plugin.js';

export default slurmBackendPlugin;
export {
  createSlurmBackend,
  SLURM_CAPABILITIES,
  type SlurmBackendData,
  type SlurmBackendSettings,
  SlurmCompute,
} from './slurm-compute.js';
export {
  SLURM_BACKEND_TYPE,
  type SlurmBackendConfig,
  type SlurmBackendConfigWithCreds,
  type SlurmConfig,
  type SlurmStoredConfig,
} from './slurm-config.js';
export { SlurmConfigurator } from './slurm-configurator.js';
export { SLURM_PROVISIONING_TIMEOUT_SECONDS, slurmBackendPlugin } from './slurm-plugin.js';
export { VERSION } from './version.js';
