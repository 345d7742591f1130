import { ociBackendPlugin } from './oci-plugin.js';

export default ociBackendPlugin;
export { OciCatalogProvider } from './oci-catalog-provider.js';
export {
  createOciBackend,
  OCI_CAPABILITIES,
  type OciBackendSettings,
  OciCompute,
} from './oci-compute.js';
export {
  OCI_BACKEND_TYPE,
  type OciBackendConfig,
  type OciBackendConfigWithCreds,
  type OciConfig,
  type OciCreds,
  type OciStoredConfig,
} from './oci-config.js';
export { OciConfigurator } from './oci-configurator.js';
export { OCI_PROVISIONING_TIMEOUT_SECONDS, ociBackendPlugin } from './oci-plugin.js';
export { VERSION } from './version.js';
