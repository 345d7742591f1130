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
 * How long an instance may take from `runJob` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (image pull and container start) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const RUNPOD_PROVISIONING_TIMEOUT_SECONDS = 600;

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
