// `@dstack/testing/emulators`: the cloud emulators (AWS, GCP, Vast.ai), the interface of the hosts their
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
  awsEmulatorBackend,
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
export type { EmulatedHost, EmulatedHosts, HostBlockDevice, HostLaunchRequest } from './emulated-hosts.js';
export {
  GcpApiError,
  gcpErrorResponse,
} from './gcp/gcp-api-error.js';
export { type BillingSku, COMPUTE_ENGINE_SERVICE_ID } from './gcp/gcp-billing-catalog.js';
export { DEFAULT_GCP_IMAGES, DEFAULT_GCP_QUOTA_LIMIT, type GcpImage } from './gcp/gcp-compute-api.js';
export type { GcpDiskState } from './gcp/gcp-compute-disks.js';
export {
  DEFAULT_GCP_EMULATOR_TIMELINE,
  type GcpEmulatorTimeline,
  type GcpInstanceStatus,
  type GcpOperationStatus,
} from './gcp/gcp-compute-instances.js';
export { COMPUTE_LINK_PREFIX, gpuQuotaMetric } from './gcp/gcp-compute-resources.js';
export {
  DEFAULT_GCP_EMULATOR_PROJECT,
  type GcpEmulator,
  type GcpEmulatorInstanceState,
  type GcpEmulatorOptions,
  type GcpEmulatorState,
  startGcpEmulator,
} from './gcp/gcp-emulator.js';
export {
  GCP_EMULATOR_USAGE,
  type GcpEmulatorCommandArguments,
  type GcpEmulatorCommandOptions,
  gcpEmulatorBackend,
  gcpEmulatorServerConfig,
  parseGcpEmulatorArguments,
  runGcpEmulatorCommand,
} from './gcp/gcp-emulator-command.js';
export {
  DEFAULT_GCP_EMULATOR_REGIONS,
  type GcpAcceleratorOffering,
  type GcpAcceleratorSpec,
  GcpEmulatorData,
  type GcpMachineOffering,
  type GcpMachineTypeSpec,
  type GcpZone,
  regionOfZone,
} from './gcp/gcp-emulator-data.js';
export {
  type ActiveGcpFault,
  GCP_FAULT_CODES,
  type GcpFault,
  type GcpFaultCode,
  type GcpProvisioningModel,
  parseGcpFault,
  parseGcpFaultFlag,
} from './gcp/gcp-emulator-faults.js';
export {
  createServiceAccount,
  type GcpServiceAccount,
  GOOGLE_TOKEN_URL,
  type ServiceAccountJson,
  serviceAccountJson,
} from './gcp/gcp-oauth.js';
export type { GcpResourcePolicyState } from './gcp/gcp-resource-policies.js';
export {
  AGENT_RUNTIME_PACKAGE,
  type AgentRuntimeServer,
  bridgeGateway,
  type ServeAgentRuntimeOptions,
  serveAgentRuntime,
} from './hosts/agent-runtime-server.js';
export {
  BASE_IMAGE_STAND_IN_PYTHON,
  baseImageStandIn,
  ensureBaseImageStandIn,
} from './hosts/base-image-stand-in.js';
export {
  DEFAULT_IMAGE_MARKER,
  type DefaultImageRegistry,
  serveDefaultImages,
  TEST_IMAGE_MARKER_PATH,
} from './hosts/default-image-registry.js';
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
  EMULATED_HOST_KINDS,
  type EmulatedHostKind,
  emulatedHostImage,
  ensureEmulatedHostImage,
} from './hosts/emulated-host-image.js';
export { HostUserDataError } from './hosts/instance-boot-files.js';
export {
  type LocalDockerRegistry,
  type LocalDockerRegistryOptions,
  localDockerRegistryMissing,
  startLocalDockerRegistry,
} from './hosts/local-docker-registry.js';
export {
  type RunnerRuntimeServer,
  type ServeRunnerRuntimeOptions,
  serveRunnerRuntime,
} from './hosts/runner-runtime-server.js';
export {
  ensureRunnerTestImages,
  RUNNER_BUSYBOX_TEST_IMAGE,
  RUNNER_MUSL_TEST_IMAGE,
} from './hosts/runner-test-images.js';
export {
  BUILD_TORCH_IMAGE_SCRIPT,
  ensureTorchTestImage,
  torchTestImage,
  torchTestImageMissing,
  torchWheel,
} from './hosts/torch-test-image.js';
export {
  DEFAULT_VASTAI_RENTAL_NETWORK,
  DockerVastaiContainers,
  type DockerVastaiContainersOptions,
  VASTAI_RENTAL_CONTRACT_LABEL,
  VASTAI_RENTAL_LABEL,
  type VastaiContainerSpec,
  VastaiContainerStartError,
  type VastaiContainers,
  type VastaiPortMap,
} from './vastai/vastai-docker-containers.js';
export {
  DEFAULT_VASTAI_EMULATOR_API_KEY,
  DEFAULT_VASTAI_PUBLIC_IP_ADDRESS,
  startVastaiEmulator,
  type VastaiEmulator,
  type VastaiEmulatorInstanceState,
  type VastaiEmulatorOptions,
  type VastaiEmulatorState,
} from './vastai/vastai-emulator.js';
export {
  parseVastaiEmulatorArguments,
  runVastaiEmulatorCommand,
  VASTAI_EMULATOR_USAGE,
  type VastaiEmulatorCommandArguments,
  type VastaiEmulatorCommandOptions,
  vastaiEmulatorBackend,
  vastaiEmulatorServerConfig,
} from './vastai/vastai-emulator-command.js';
export {
  DEFAULT_VASTAI_EMULATOR_ASKS,
  type VastaiAskSpec,
  type VastaiOffer,
  vastaiLocation,
  vastaiOffer,
} from './vastai/vastai-emulator-data.js';
export {
  type ActiveVastaiFault,
  DEFAULT_VASTAI_OUTBID_AFTER_MS,
  DEFAULT_VASTAI_SLOW_RESPONSE_MS,
  parseVastaiFault,
  parseVastaiFaultFlag,
  VASTAI_FAULT_CODES,
  VASTAI_ROUTES,
  type VastaiFault,
  type VastaiFaultCode,
  type VastaiRoute,
} from './vastai/vastai-emulator-faults.js';
export {
  DEFAULT_VASTAI_EMULATOR_TIMELINE,
  type VastaiActualStatus,
  type VastaiEmulatorTimeline,
  type VastaiInstance,
} from './vastai/vastai-instances.js';
export { VastaiOfferBook } from './vastai/vastai-offer-book.js';
export {
  DEFAULT_VASTAI_DISK_GB,
  VASTAI_RUNTYPES,
  type VastaiRentRequest,
  type VastaiRuntype,
} from './vastai/vastai-rent-request.js';
export { DEFAULT_VASTAI_SEARCH_LIMIT, VASTAI_QUERY_OPERATORS } from './vastai/vastai-search-query.js';
