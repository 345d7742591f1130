export { configurationBackendSchema } from './backend-type.js';
export {
  type BoundProblem,
  boundedConfiguration,
  type ConfigurationBounds,
  configurationBoundProblem,
  MAX_CONFIGURATION_ENTRIES,
  MAX_CONFIGURATION_VALUES,
} from './configuration-bounds.js';
export { formatConfigurationError } from './configuration-error.js';
export {
  DURATION_EXPECTATION,
  durationSchema,
  type OffableDuration,
  offableDurationSchema,
  parseDuration,
} from './duration.js';
export { type Env, envSchema, MAX_ENV_VALUE_LENGTH } from './env.js';
export {
  DEFAULT_FLEET_IDLE_DURATION,
  type FleetConfiguration,
  type FleetNodes,
  fleetConfigurationSchema,
  fleetNodesSchema,
  type SshConfig,
} from './fleet-configuration.js';
export {
  type GatewayConfiguration,
  gatewayConfigurationSchema,
  REDACTED_PRIVATE_KEY,
} from './gateway-configuration.js';
export {
  computeCapabilitySchema,
  DEFAULT_GPU_SPEC_COUNT,
  GPU_SPEC_EXPECTATION,
  GPU_VENDORS,
  type GpuSpec,
  type GpuVendor,
  gpuSpecSchema,
  inferGpuVendor,
  NO_GPU_REQUIREMENT_COUNT,
  parseGpuSpecText,
  parseGpuVendor,
} from './gpu-spec.js';
export { formatMemory, memorySchema, parseMemory } from './memory.js';
export {
  type InstanceMountPoint,
  type MountPoint,
  mountPointSchema,
  type VolumeMountPoint,
} from './mount-point.js';
export {
  type AnyConfiguration,
  anyConfigurationSchema,
  CONFIGURATION_SCHEMAS,
  CONFIGURATION_TYPES,
  type ConfigurationType,
  type ParseOptions,
  parseConfiguration,
  parseProfilesFile,
  validateConfiguration,
  validateConfigurationOfType,
} from './parse-configuration.js';
export { type PortMapping, parsePortMapping, portMappingSchema, servicePortSchema } from './ports.js';
export {
  CREATION_POLICIES,
  DEFAULT_RETRY_DURATION,
  DEFAULT_RUN_IDLE_DURATION,
  DEFAULT_STOP_DURATION,
  type Profile,
  type ProfileParams,
  type ProfileRetry,
  type ProfilesFile,
  profileParamsSchema,
  profileSchema,
  profilesFileSchema,
  retrySchema,
  SPOT_POLICIES,
  type SpotPolicy,
  STARTUP_ORDERS,
  STOP_CRITERIA,
} from './profile.js';
export {
  formatRange,
  intRangeSchema,
  memoryRangeSchema,
  parseRangeText,
} from './range.js';
export {
  type CpuSpec,
  cpuSpecSchema,
  DEFAULT_CPU_COUNT,
  DEFAULT_DISK_SIZE,
  DEFAULT_MEMORY,
  type DiskSpec,
  defaultResourcesSpec,
  diskSpecSchema,
  type ResourcesSpec,
  resourcesSpecSchema,
} from './resources.js';
export {
  PYTHON_VERSIONS,
  type PythonVersion,
  type RepoSpec,
  repoSpecSchema,
} from './run-configuration-base.js';
export {
  type DevEnvironmentConfiguration,
  devEnvironmentConfigurationSchema,
  IDES,
  type NodeGroup,
  type RunConfiguration,
  runConfigurationSchema,
  type TaskConfiguration,
  taskConfigurationSchema,
} from './run-configurations.js';
export { RUN_PRIORITY_DEFAULT, RUN_PRIORITY_MAX, RUN_PRIORITY_MIN } from './run-priority.js';
export { schemaFieldPaths } from './schema-fields.js';
export {
  type ReplicaGroup,
  type ScalingSpec,
  type ServiceConfiguration,
  serviceConfigurationSchema,
} from './service-configuration.js';
export {
  InterpolatorError,
  isValidGroupsIpReference,
  isValidReferenceName,
  type NameValidator,
  VariablesInterpolator,
} from './variables-interpolator.js';
export {
  externalVolumeId,
  type VolumeConfiguration,
  volumeConfigurationSchema,
} from './volume-configuration.js';
export { locateInDocument, type YamlLocation } from './yaml-positions.js';
export {
  assertYamlSize,
  MAX_YAML_ALIAS_COUNT,
  MAX_YAML_BYTES,
  type ParsedYamlText,
  parseYamlText,
  type YamlTextOptions,
} from './yaml-text.js';
