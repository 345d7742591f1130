import { kubernetesBackendPlugin } from './kubernetes-plugin.js';

export default kubernetesBackendPlugin;
export { type ApiServerAccess, clustersOf, type KubernetesCluster } from './kubeconfig.js';
export { KubernetesApi, type KubernetesObject } from './kubernetes-api.js';
export {
  createKubernetesBackend,
  KUBERNETES_CAPABILITIES,
  type KubernetesBackendData,
  type KubernetesBackendSettings,
  KubernetesCompute,
} from './kubernetes-compute.js';
export {
  KUBERNETES_BACKEND_TYPE,
  type KubernetesBackendConfig,
  type KubernetesBackendConfigWithCreds,
  type KubernetesConfig,
  type KubernetesCreds,
  type KubernetesStoredConfig,
} from './kubernetes-config.js';
export { KubernetesConfigurator, parseKubernetesBackendConfig } from './kubernetes-configurator.js';
export { KUBERNETES_PROVISIONING_TIMEOUT_SECONDS, kubernetesBackendPlugin } from './kubernetes-plugin.js';
export { VERSION } from './version.js';
