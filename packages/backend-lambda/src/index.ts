import { lambdaBackendPlugin } from './lambda-plugin.js';

export default lambdaBackendPlugin;
export {
  LAMBDA_DEFAULT_ENDPOINT_URL,
  LambdaApi,
  type LambdaApiOptions,
  type LambdaInstance,
  type LambdaInstanceStatus,
  type LambdaInstanceType,
  type LambdaInstanceTypeEntry,
} from './lambda-api.js';
export {
  LAMBDA_ARM_FLAG,
  LAMBDA_CATALOG_PROVIDER_NAME,
  LambdaCatalogProvider,
  type LambdaCatalogProviderSettings,
  parseLambdaDescription,
} from './lambda-catalog-provider.js';
export {
  createLambdaBackend,
  LAMBDA_CAPABILITIES,
  type LambdaBackendSettings,
  LambdaCompute,
  lambdaSshKeyName,
} from './lambda-compute.js';
export {
  LAMBDA_BACKEND_TYPE,
  type LambdaBackendConfig,
  type LambdaBackendConfigWithCreds,
  type LambdaConfig,
  type LambdaCreds,
  type LambdaStoredConfig,
} from './lambda-config.js';
export { LambdaConfigurator } from './lambda-configurator.js';
export { LAMBDA_PROVISIONING_TIMEOUT_SECONDS, lambdaBackendPlugin } from './lambda-plugin.js';
export { LAMBDA_SSH_PORT, LAMBDA_SSH_USER } from './lambda-ssh-bootstrap.js';
export { VERSION } from './version.js';
