// `@dstack/testing/emulators`: the cloud emulators (AWS today), the interface of the hosts their
// instances boot and the Docker hosts, loadable by a plain Node process (`pnpm emulator`) as well
// as by tests.

export {
  AMAZON_DLAMI_OWNER,
  CANONICAL_OWNER,
  DEFAULT_EC2_IMAGES,
  DSTACK_IMAGES_OWNER,
  type Ec2ImageTemplate,
} from './aws/aws-ec2-images.js';
export {
  type AwsEmulatorTimeline,
  DEFAULT_AWS_EMULATOR_TIMELINE,
  EC2_STATE_CODES,
  type Ec2InstanceStateName,
  SPOT_INTERRUPTION_REASON,
} from './aws/aws-ec2-instances.js';
export {
  type AwsEmulator,
  type AwsEmulatorCredentials,
  type AwsEmulatorInstanceState,
  type AwsEmulatorOptions,
  type AwsEmulatorState,
  type AwsHeldAnswer,
  DEFAULT_AWS_EMULATOR_ACCOUNT_ID,
  DEFAULT_AWS_EMULATOR_CREDENTIALS,
  startAwsEmulator,
} from './aws/aws-emulator.js';
export {
  AWS_EMULATOR_USAGE,
  type AwsEmulatorCommandArguments,
  type AwsEmulatorCommandOptions,
  awsEmulatorServerConfig,
  parseAwsEmulatorArguments,
  runAwsEmulatorCommand,
} from './aws/aws-emulator-command.js';
export {
  type AwsAvailabilityZone,
  AwsEmulatorData,
  type AwsGpuSpec,
  type AwsInstanceTypeSpec,
  type AwsZoneOffering,
  DEFAULT_AWS_EMULATOR_REGIONS,
} from './aws/aws-emulator-data.js';
export {
  type ActiveAwsFault,
  AWS_FAULT_CODES,
  type AwsFault,
  type AwsFaultCode,
  parseAwsFault,
  parseAwsFaultFlag,
} from './aws/aws-emulator-faults.js';
export { BULK_PRICE_LIST_PATH } from './aws/aws-pricing.js';
export {
  DEFAULT_VCPU_QUOTA,
  instanceClassOf,
  VCPU_QUOTAS,
  type VcpuQuota,
  vcpuQuotaFor,
} from './aws/aws-vcpu-quotas.js';
export type { EmulatedHost, EmulatedHosts, HostLaunchRequest } from './emulated-hosts.js';
export {
  DEFAULT_EMULATED_HOSTS_NETWORK,
  DEFAULT_SSHD_TIMEOUT_MS,
  DockerEmulatedHosts,
  type DockerEmulatedHostsOptions,
  EMULATED_HOST_EMULATOR_LABEL,
  EMULATED_HOST_INSTANCE_LABEL,
  EMULATED_HOST_LABEL,
  HostTerminatedError,
} from './hosts/docker-emulated-hosts.js';
export {
  BUILD_HOST_IMAGE_SCRIPT,
  EMULATED_HOST_IMAGE,
  ensureEmulatedHostImage,
} from './hosts/emulated-host-image.js';
export { HostUserDataError } from './hosts/instance-boot-files.js';
export {
  bridgeGateway,
  type ServeShimTarballOptions,
  type ShimTarballServer,
  serveShimTarball,
} from './hosts/shim-tarball-server.js';
