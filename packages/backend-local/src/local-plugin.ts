import { defineBackendPlugin } from '@dstack/core';
import { LocalCatalogProvider, localCatalogProvider } from './local-catalog-provider.js';
import { LOCAL_CAPABILITIES } from './local-compute.js';
import type { LocalBackendConfig, LocalBackendConfigWithCreds } from './local-config.js';
import { localConfigModels } from './local-config.js';
import { type LocalComputeOverrides, LocalConfigurator } from './local-configurator.js';

/**
 * How long a local instance may take to a reachable shim: a local process comes
 * up in seconds, so a minute means it is stuck.
 */
export const LOCAL_PROVISIONING_TIMEOUT_SECONDS = 60;

/** The local backend's plugin descriptor (contract v1). */
export const localBackendPlugin = defineBackendPlugin<LocalBackendConfigWithCreds, LocalBackendConfig>({
  type: 'local',
  computeKind: 'vm',
  capabilities: LOCAL_CAPABILITIES,
  configSchemas: localConfigModels,
  createConfigurator: () => new LocalConfigurator(),
  catalogProvider: localCatalogProvider,
  provisioningTimeoutSeconds: LOCAL_PROVISIONING_TIMEOUT_SECONDS,
  // Jobs run as the server's user beside its database and config.yml: global admins only.
  runsOnServerHost: true,
});

/**
 * The local backend's plugin with Compute settings config.yml does not set: e.g. the host's
 * resources, so that a server in a test sees a host of a given size. Register it with the
 * server (`startServer({ plugins })`); it takes the place of the package's descriptor.
 */
export function createLocalBackendPlugin(settings: LocalComputeOverrides = {}) {
  return defineBackendPlugin<LocalBackendConfigWithCreds, LocalBackendConfig>({
    ...localBackendPlugin,
    createConfigurator: () => new LocalConfigurator(settings),
    catalogProvider: settings.hostResources
      ? new LocalCatalogProvider({ hostResources: settings.hostResources })
      : localCatalogProvider,
  });
}
