import { defineBackendPlugin } from '@dstack/core';
import { awsCatalogProvider } from './aws-catalog-provider.js';
import { AWS_CAPABILITIES } from './aws-compute.js';
import {
  AWS_BACKEND_TYPE,
  type AwsBackendConfig,
  type AwsBackendConfigWithCreds,
  awsConfigModels,
} from './aws-config.js';
import { AwsConfigurator } from './aws-configurator.js';

/**
 * How long an instance may take from `createInstance` to a reachable agent
 * before the server gives up on it. 600 s (10 minutes) is dstack's default;
 * measure the provider's boot (VM start and cloud-init) time and change it.
 * A function of the instance type can replace it when some types boot slower.
 */
export const AWS_PROVISIONING_TIMEOUT_SECONDS = 600;

/** The aws backend's plugin descriptor (contract v1); the package's default export. */
export const awsBackendPlugin = defineBackendPlugin<AwsBackendConfigWithCreds, AwsBackendConfig>({
  type: AWS_BACKEND_TYPE,
  computeKind: 'vm',
  capabilities: AWS_CAPABILITIES,
  configSchemas: awsConfigModels,
  createConfigurator: () => new AwsConfigurator(),
  catalogProvider: awsCatalogProvider,
  provisioningTimeoutSeconds: AWS_PROVISIONING_TIMEOUT_SECONDS,
});
