// `@dstack/testing/emulators`: the cloud emulators (AWS, GCP, Vast.ai, Lambda, Verda), the interface of the hosts their
// instances boot and the Docker hosts, loadable by a plain Node process (`pnpm emulator`) as well
// as by tests.

export {
  CAPACITY_RESERVATION_STATES,
  type CapacityReservationSpec,
  type CapacityReservationState,
  type CapacityReservationTenancy,
  type CapacityReservationType,
  type InstanceMatchCriteria,
} from './aws/aws-ec2-capacity-reservations.js';
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
  type AwsEmulatorCapacityReservationState,
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
export {
  type AzureServicePrincipal,
  createServicePrincipal,
} from './azure/azure-active-directory.js';
export {
  type AzureEmulator,
  type AzureEmulatorOptions,
  type AzureEmulatorResourceState,
  type AzureEmulatorState,
  type AzureEmulatorVmState,
  startAzureEmulator,
} from './azure/azure-emulator.js';
export {
  AZURE_EMULATOR_USAGE,
  type AzureEmulatorCommandArguments,
  type AzureEmulatorCommandOptions,
  type AzureEmulatorWithCatalog,
  azureEmulatorBackend,
  azureEmulatorServerConfig,
  parseAzureEmulatorArguments,
  runAzureEmulatorCommand,
  startAzureEmulatorWithCatalog,
} from './azure/azure-emulator-command.js';
export {
  AzureEmulatorData,
  type AzureRegion,
  type AzureSizePrices,
  type AzureVmSize,
  DEFAULT_AZURE_EMULATOR_REGIONS,
  DEFAULT_AZURE_VM_SIZES,
} from './azure/azure-emulator-data.js';
export {
  type ActiveAzureFault,
  AZURE_FAULT_CODES,
  type AzureFault,
  type AzureFaultCode,
  parseAzureFault,
  parseAzureFaultFlag,
} from './azure/azure-emulator-faults.js';
export { DSTACK_COMMUNITY_GALLERY } from './azure/azure-resource-manager.js';
export {
  AZURE_RETAIL_PRICES_PAGE_SIZE,
  type AzureRetailPrice,
  parseRetailPricesFilter,
  retailPrices,
} from './azure/azure-retail-prices.js';
export {
  type AzureEmulatorTimeline,
  DEFAULT_AZURE_EMULATOR_TIMELINE,
} from './azure/azure-virtual-machines.js';
export type { EmulatedHost, EmulatedHosts, HostBlockDevice, HostLaunchRequest } from './emulated-hosts.js';
export {
  GcpApiError,
  gcpErrorResponse,
} from './gcp/gcp-api-error.js';
export { type BillingSku, COMPUTE_ENGINE_SERVICE_ID } from './gcp/gcp-billing-catalog.js';
export type { GcpDiskState } from './gcp/gcp-compute-disks.js';
export {
  DEFAULT_GCP_EMULATOR_TIMELINE,
  type GcpEmulatorTimeline,
  type GcpInstanceStatus,
  type GcpOperationStatus,
} from './gcp/gcp-compute-instances.js';
export { DEFAULT_GCP_IMAGES, DEFAULT_GCP_QUOTA_LIMIT, type GcpImage } from './gcp/gcp-compute-project.js';
export { COMPUTE_LINK_PREFIX, gpuQuotaMetric } from './gcp/gcp-compute-resources.js';
export {
  DEFAULT_GCP_EMULATOR_PROJECT,
  type GcpEmulator,
  type GcpEmulatorInstanceState,
  type GcpEmulatorOptions,
  type GcpEmulatorReservationState,
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
export {
  GCP_RESERVATION_STATUSES,
  type GcpReservationSpec,
  type GcpReservationStatus,
} from './gcp/gcp-reservations.js';
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
  DockerRentalContainers,
  type DockerRentalContainersOptions,
  type RentalContainerSpec,
  RentalContainerStartError,
  type RentalContainers,
  type RentalPortMap,
  type RentalPortRequest,
} from './hosts/docker-rental-containers.js';
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
  DEFAULT_LAMBDA_EMULATOR_API_KEY,
  DEFAULT_LAMBDA_EMULATOR_TIMELINE,
  type LambdaEmulator,
  type LambdaEmulatorInstanceState,
  type LambdaEmulatorOptions,
  type LambdaEmulatorState,
  type LambdaEmulatorTimeline,
  startLambdaEmulator,
} from './lambda/lambda-emulator.js';
export {
  LAMBDA_EMULATOR_USAGE,
  type LambdaEmulatorCommandArguments,
  type LambdaEmulatorCommandOptions,
  lambdaEmulatorBackend,
  lambdaEmulatorServerConfig,
  parseLambdaEmulatorArguments,
  runLambdaEmulatorCommand,
} from './lambda/lambda-emulator-command.js';
export {
  DEFAULT_LAMBDA_INSTANCE_TYPES,
  DEFAULT_LAMBDA_REGIONS,
  type LambdaInstanceTypeSpec,
} from './lambda/lambda-emulator-data.js';
export {
  type ActiveLambdaFault,
  LAMBDA_FAULT_CODES,
  type LambdaFault,
  type LambdaFaultCode,
  parseLambdaFault,
  parseLambdaFaultFlag,
} from './lambda/lambda-emulator-faults.js';
export { startNebiusEmulator } from './nebius/nebius-emulator.js';
export {
  NEBIUS_EMULATOR_USAGE,
  type NebiusEmulatorCommandArguments,
  type NebiusEmulatorCommandOptions,
  nebiusEmulatorBackend,
  nebiusEmulatorServerConfig,
  parseNebiusEmulatorArguments,
  runNebiusEmulatorCommand,
} from './nebius/nebius-emulator-command.js';
export {
  DEFAULT_NEBIUS_FABRICS,
  DEFAULT_NEBIUS_PLATFORMS,
  DEFAULT_NEBIUS_PROJECTS,
  DEFAULT_NEBIUS_TENANT_ID,
  type NebiusPlatformSpec,
  type NebiusPresetSpec,
  type NebiusProjectSpec,
} from './nebius/nebius-emulator-data.js';
export {
  type ActiveNebiusFault,
  NEBIUS_FAULT_CODES,
  type NebiusFault,
  type NebiusFaultCode,
  parseNebiusFault,
  parseNebiusFaultFlag,
} from './nebius/nebius-emulator-faults.js';
export {
  DEFAULT_NEBIUS_EMULATOR_TIMELINE,
  type NebiusEmulator,
  type NebiusEmulatorOptions,
  type NebiusEmulatorState,
  type NebiusEmulatorTimeline,
  type NebiusServiceAccountKey,
} from './nebius/nebius-emulator-types.js';
export {
  type OciEmulator,
  type OciEmulatorInstanceState,
  type OciEmulatorOptions,
  type OciEmulatorState,
  type OciEmulatorUser,
  startOciEmulator,
} from './oci/oci-emulator.js';
export {
  OCI_EMULATOR_USAGE,
  type OciEmulatorCommandArguments,
  type OciEmulatorCommandOptions,
  ociEmulatorBackend,
  ociEmulatorServerConfig,
  parseOciEmulatorArguments,
  runOciEmulatorCommand,
} from './oci/oci-emulator-command.js';
export {
  DEFAULT_OCI_REGIONS,
  DEFAULT_OCI_SHAPES,
  OciEmulatorData,
  type OciRegion,
  type OciShape,
} from './oci/oci-emulator-data.js';
export {
  type ActiveOciFault,
  OCI_FAULT_CODES,
  type OciFault,
  type OciFaultCode,
  parseOciFault,
  parseOciFaultFlag,
} from './oci/oci-emulator-faults.js';
export { DEFAULT_OCI_EMULATOR_TIMELINE, type OciEmulatorTimeline } from './oci/oci-instances.js';
export { DSTACK_MARKETPLACE_LISTINGS } from './oci/oci-marketplace.js';
export { publicKeyFingerprint } from './oci/oci-signature.js';
export { type PublishedCatalogServer, servePublishedCatalog } from './published-catalog-server.js';
export { DEFAULT_RUNPOD_POD_NETWORK, DockerRunpodPods } from './runpod/runpod-docker-pods.js';
export {
  DEFAULT_RUNPOD_EMULATOR_API_KEY,
  type RunpodEmulator,
  type RunpodEmulatorOptions,
  type RunpodEmulatorPodState,
  type RunpodEmulatorState,
  startRunpodEmulator,
} from './runpod/runpod-emulator.js';
export {
  parseRunpodEmulatorArguments,
  RUNPOD_EMULATOR_USAGE,
  type RunpodEmulatorCommandArguments,
  type RunpodEmulatorCommandOptions,
  runpodEmulatorBackend,
  runpodEmulatorServerConfig,
  runRunpodEmulatorCommand,
} from './runpod/runpod-emulator-command.js';
export {
  DEFAULT_RUNPOD_COUNTRY_CODES,
  DEFAULT_RUNPOD_CPU_FLAVORS,
  DEFAULT_RUNPOD_DATA_CENTERS,
  DEFAULT_RUNPOD_EMULATOR_DATA,
  DEFAULT_RUNPOD_GPU_TYPES,
  isSecureCloudLocation,
  type RunpodCpuFlavorSpec,
  type RunpodDataCenter,
  type RunpodEmulatorData,
  type RunpodGpuTypeSpec,
} from './runpod/runpod-emulator-data.js';
export {
  type ActiveRunpodFault,
  DEFAULT_RUNPOD_SLOW_RESPONSE_MS,
  parseRunpodFault,
  parseRunpodFaultFlag,
  RUNPOD_FAULT_CODES,
  type RunpodFault,
  type RunpodFaultCode,
} from './runpod/runpod-emulator-faults.js';
export { RUNPOD_NO_CAPACITY_MESSAGE } from './runpod/runpod-stock.js';
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
export {
  DEFAULT_VERDA_EMULATOR_CLIENT,
  DEFAULT_VERDA_EMULATOR_TIMELINE,
  startVerdaEmulator,
  type VerdaEmulator,
  type VerdaEmulatorOptions,
  type VerdaEmulatorState,
  type VerdaEmulatorTimeline,
} from './verda/verda-emulator.js';
export {
  parseVerdaEmulatorArguments,
  runVerdaEmulatorCommand,
  VERDA_EMULATOR_USAGE,
  type VerdaEmulatorCommandArguments,
  type VerdaEmulatorCommandOptions,
  verdaEmulatorBackend,
  verdaEmulatorServerConfig,
} from './verda/verda-emulator-command.js';
export {
  DEFAULT_VERDA_INSTANCE_TYPES,
  DEFAULT_VERDA_LOCATIONS,
  type VerdaInstanceTypeSpec,
} from './verda/verda-emulator-data.js';
export {
  type ActiveVerdaFault,
  parseVerdaFault,
  parseVerdaFaultFlag,
  VERDA_FAULT_CODES,
  type VerdaFault,
  type VerdaFaultCode,
} from './verda/verda-emulator-faults.js';
