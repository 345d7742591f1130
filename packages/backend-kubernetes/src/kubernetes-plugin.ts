import { defineBackendPlugin } from '@dstack/core';
import { KUBERNETES_CAPABILITIES } from './kubernetes-compute.js';
import {
  KUBERNETES_BACKEND_TYPE,
  type KubernetesBackendConfig,
  type KubernetesBackendConfigWithCreds,
  kubernetesConfigModels,
} from './kubernetes-config.js';
import { KubernetesConfigurator } from './kubernetes-configurator.js';

/**
 * How long a pod may take from `runJob` to a reachable runner (image pull included) before the
 * server gives up on it: 20 minutes, dstack's for Kubernetes.
 */
export const KUBERNETES_PROVISIONING_TIMEOUT_SECONDS = 1200;

/**
 * The Kubernetes backend's plugin descriptor (contract v1); the package's default export. No
 * catalog provider: offers come from the cluster's nodes.
 */
export const kubernetesBackendPlugin = defineBackendPlugin<
  KubernetesBackendConfigWithCreds,
  KubernetesBackendConfig
>({
  type: KUBERNETES_BACKEND_TYPE,
  computeKind: 'container',
  capabilities: KUBERNETES_CAPABILITIES,
  configSchemas: kubernetesConfigModels,
  createConfigurator: () => new KubernetesConfigurator(),
  provisioningTimeoutSeconds: KUBERNETES_PROVISIONING_TIMEOUT_SECONDS,
});
