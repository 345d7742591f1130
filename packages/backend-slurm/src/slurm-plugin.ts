import { defineBackendPlugin } from '@dstack/core';
import { SLURM_CAPABILITIES } from './slurm-compute.js';
import {
  SLURM_BACKEND_TYPE,
  type SlurmBackendConfig,
  type SlurmBackendConfigWithCreds,
  slurmConfigModels,
} from './slurm-config.js';
import { SlurmConfigurator } from './slurm-configurator.js';

/**
 * How long a job may take from `sbatch` to a runner that answers before the server gives up on it:
 * 600 s (dstack's default), which covers a job waiting in the queue for a node a while. dstack's
 * own backend waits 60 s for the job to start.
 */
export const SLURM_PROVISIONING_TIMEOUT_SECONDS = 600;

/**
 * The slurm backend's plugin descriptor (contract v1); the package's default export. No catalog
 * provider: offers come from the clusters' nodes, asked live by the Compute.
 */
export const slurmBackendPlugin = defineBackendPlugin<SlurmBackendConfigWithCreds, SlurmBackendConfig>({
  type: SLURM_BACKEND_TYPE,
  computeKind: 'container',
  capabilities: SLURM_CAPABILITIES,
  configSchemas: slurmConfigModels,
  createConfigurator: () => new SlurmConfigurator(),
  provisioningTimeoutSeconds: SLURM_PROVISIONING_TIMEOUT_SECONDS,
});
