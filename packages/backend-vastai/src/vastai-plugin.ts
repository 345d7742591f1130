import { defineBackendPlugin } from '@dstack/core';
import { vastAiCatalogProvider } from './vastai-catalog-provider.js';
import { VAST_AI_CAPABILITIES } from './vastai-compute.js';
import {
  VAST_AI_BACKEND_TYPE,
  type VastAiBackendConfig,
  type VastAiBackendConfigWithCreds,
  vastAiConfigModels,
} from './vastai-config.js';
import { VastAiConfigurator } from './vastai-configurator.js';

/**
 * How long an instance may take from `runJob` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (image pull and container start) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const VAST_AI_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The vastai backend's plugin descriptor (contract v1); the package's default export. */
export const vastAiBackendPlugin = defineBackendPlugin<VastAiBackendConfigWithCreds, VastAiBackendConfig>({
  type: VAST_AI_BACKEND_TYPE,
  computeKind: 'container',
  capabilities: VAST_AI_CAPABILITIES,
  configSchemas: vastAiConfigModels,
  createConfigurator: () => new VastAiConfigurator(),
  catalogProvider: vastAiCatalogProvider,
  provisioningTimeoutSeconds: VAST_AI_PROVISIONING_TIMEOUT_SECONDS,
});
