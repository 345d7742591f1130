import { defineBackendPlugin } from '@dstack/core';
import { LOCAL_CAPABILITIES } from './local-compute.js';
import type { LocalBackendConfig, LocalBackendConfigWithCreds } from './local-config.js';
import { localConfigModels } from './local-config.js';
import { LocalConfigurator } from './local-configurator.js';

/** The local backend's plugin descriptor (contract v1). */
export const localBackendPlugin = defineBackendPlugin<LocalBackendConfigWithCreds, LocalBackendConfig>({
  type: 'local',
  computeKind: 'vm',
  capabilities: LOCAL_CAPABILITIES,
  configSchemas: localConfigModels,
  createConfigurator: () => new LocalConfigurator(),
  // A local process comes up in seconds; a minute means it is stuck.
  provisioningTimeoutSeconds: 60,
});
