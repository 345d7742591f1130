import { defineBackendPlugin } from '@dstack/core';
import { runpodCatalogProvider } from './runpod-catalog-provider.js';
import { RUNPOD_CAPABILITIES } from './runpod-compute.js';
import {
  RUNPOD_BACKEND_TYPE,
  type RunpodBackendConfig,
  type RunpodBackendConfigWithCreds,
  runpodConfigModels,
} from './runpod-config.js';
import { RunpodConfigurator } from './runpod-configurator.js';

/**
 * How long a pod may take from `runJob` to a reachable runner before the server gives up on it:
 * 20 minutes, dstack's for RunPod (a pod pulls the job's image, often large, before it runs).
 */
export const RUNPOD_PROVISIONING_TIMEOUT_SECONDS = 20 * 60;

/** The runpod backend's plugin descriptor (contract v1); the package's default export. */
export const runpodBackendPlugin = defineBackendPlugin<RunpodBackendConfigWithCreds, RunpodBackendConfig>({
  type: RUNPOD_BACKEND_TYPE,
  computeKind: 'container',
  capabilities: RUNPOD_CAPABILITIES,
  configSchemas: runpodConfigModels,
  createConfigurator: () => new RunpodConfigurator(),
  catalogProvider: runpodCatalogProvider,
  provisioningTimeoutSeconds: RUNPOD_PROVISIONING_TIMEOUT_SECONDS,
});
