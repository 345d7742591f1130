import { defineBackendPlugin } from '@dstack/core';
import { lambdaCatalogProvider } from './lambda-catalog-provider.js';
import { LAMBDA_CAPABILITIES } from './lambda-compute.js';
import {
  LAMBDA_BACKEND_TYPE,
  type LambdaBackendConfig,
  type LambdaBackendConfigWithCreds,
  lambdaConfigModels,
} from './lambda-config.js';
import { LambdaConfigurator } from './lambda-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent before the server
 * gives up on it: 30 minutes, dstack's for Lambda (its instances take minutes to become active).
 */
export const LAMBDA_PROVISIONING_TIMEOUT_SECONDS = 1800;

/** The lambda backend's plugin descriptor (contract v1); the package's default export. */
export const lambdaBackendPlugin = defineBackendPlugin<LambdaBackendConfigWithCreds, LambdaBackendConfig>({
  type: LAMBDA_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: LAMBDA_CAPABILITIES,
  configSchemas: lambdaConfigModels,
  createConfigurator: () => new LambdaConfigurator(),
  catalogProvider: lambdaCatalogProvider,
  provisioningTimeoutSeconds: LAMBDA_PROVISIONING_TIMEOUT_SECONDS,
});
