import { awsBackendPlugin } from './aws-plugin.js';

export default awsBackendPlugin;
export { AwsCatalogProvider } from './aws-catalog-provider.js';
export {
  AWS_CAPABILITIES,
  type AwsBackendSettings,
  AwsCompute,
  createAwsBackend,
} from './aws-compute.js';
export {
  AWS_BACKEND_TYPE,
  type AwsBackendConfig,
  type AwsBackendConfigWithCreds,
  type AwsConfig,
  type AwsCreds,
  type AwsStoredConfig,
} from './aws-config.js';
export { AwsConfigurator } from './aws-configurator.js';
export { AWS_PROVISIONING_TIMEOUT_SECONDS, awsBackendPlugin } from './aws-plugin.js';
export { VERSION } from './version.js';
