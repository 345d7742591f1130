import { defineBackendPlugin } from '@dstack/core';
import { kubernetesCatalogProvider } from './kubernetes-catalog-provider.js';
import { KUBERNETES_CAPABILITIES } from './kubernetes-compute.js';
import {
  KUBERNETES_BACKEND_TYPE,
  type KubernetesBackendConfig,
  type KubernetesBackendConfigWithCreds,
  kubernetesConfigModels,
} from './kubernetes-config.js';
import { KubernetesConfigurator } from './kubernetes-configurator.js';

/**
 * How long an instance may take from `runJob` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (image pull and container start) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const KUBERNETES_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The kubernetes backend's plugin descriptor (contract v1); the package's default export. */
export const kubernetesBackendPlugin = defineBackendPlugin<
  KubernetesBackendConfigWithCreds,
  KubernetesBackendConfig
>({
  type: KUBERNETES_BACKEND_TYPE,
  computeKind: 'container',
  capabilities: KUBERNETES_CAPABILITIES,
  configSchemas: kubernetesConfigModels,
  createConfigurator: () => new KubernetesConfigurator(),
  catalogProvider: kubernetesCatalogProvider,
  provisioningTimeoutSeconds: KUBERNETES_PROVISIONING_TIMEOUT_SECONDS,
});
