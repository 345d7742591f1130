export {
  type ExpandProviderOptions,
  expandProvider,
  type ProviderParametersSource,
  parseProviderParameters,
  providerFieldError,
} from './expand-provider.js';
export {
  assertProvider,
  defineProvider,
  isProvider,
  PROVIDER_TYPE,
  type Provider,
  type ProviderContext,
  type ProviderDefinition,
  type ProviderJobs,
  type ProviderParametersSchema,
  type ProviderV1,
  SUPPORTED_PROVIDER_SPECIFICATION_VERSIONS,
} from './provider.js';
export { ProviderError } from './provider-error.js';
export {
  type ProviderJobSpec,
  type ProviderJobSpecInput,
  ProviderJobSpecSchema,
  validateProviderJobs,
} from './provider-job-spec.js';
