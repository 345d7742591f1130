/**
 * The part of RunPod's GraphQL schema (`https://api.runpod.io/graphql`) that dstack and gpuhunt
 * use, with RunPod's type, field and input names: the catalog queries (`gpuTypes` with
 * `lowestPrice`, `dataCenters`, `countryCodes`, `cpuFlavors`), the account (`myself`: its pods
 * and registry credentials), `pod`, and the mutations (`podFindAndDeployOnDemand`,
 * `podRentInterruptable`, `deployCpuPod`, `podTerminate`, `saveRegistryAuth`,
 * `deleteRegistryAuth`). A query naming anything else fails validation, as on RunPod.
 */
/** The fields both GPU deploys (`podFindAndDeployOnDemand`, `podRentInterruptable`) take. */
const GPU_POD_DEPLOY_FIELDS = `
    name: String
    imageName: String!
    gpuTypeId: String
    cloudType: CloudTypeEnum
    dataCenterId: String
    countryCode: String
    gpuCount: Int
    volumeInGb: Int
    containerDiskInGb: Int
    minVcpuCount: Int
    minMemoryInGb: Int
    dockerArgs: String
    ports: String
    volumeMountPath: String
    env: [EnvironmentVariableInput]
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    minCudaVersion: String
    allowedCudaVersions: [String]
    templateId: String
    networkVolumeId: String
    containerRegistryAuthId: String
`;

export const RUNPOD_GRAPHQL_SCHEMA = /* GraphQL */ `
  enum CloudTypeEnum {
    SECURE
    COMMUNITY
    ALL
  }

  type Query {
    myself: User
    pod(input: PodFilter): Pod
    gpuTypes(input: GpuTypeFilter): [GpuType]
    dataCenters: [DataCenter]
    countryCodes: [String]
    cpuFlavors: [CpuFlavor]
  }

  type Mutation {
    podFindAndDeployOnDemand(input: PodFindAndDeployOnDemandInput): Pod
    podRentInterruptable(input: PodRentInterruptableInput!): Pod
    deployCpuPod(input: deployCpuPodInput!): Pod
    podTerminate(input: PodTerminateInput): Boolean
    saveRegistryAuth(input: SaveRegistryAuthInput!): ContainerRegistryAuth
    deleteRegistryAuth(registryAuthId: String!): Boolean
  }

  type User {
    id: String
    authId: String
    email: String
    pods: [Pod]
    containerRegistryCreds: [ContainerRegistryAuth]
  }

  type ContainerRegistryAuth {
    id: String
    name: String
  }

  input PodFilter {
    podId: String!
  }

  input GpuTypeFilter {
    id: String
    ids: [String]
    cluster: Boolean
  }

  input GpuLowestPriceInput {
    gpuCount: Int
    secureCloud: Boolean
    dataCenterId: String
    countryCode: String
    minDisk: Int
    minMemoryInGb: Int
    minVcpuCount: Int
    minCudaVersion: String
    supportPublicIp: Boolean
  }

  type GpuType {
    id: String
    displayName: String
    manufacturer: String
    memoryInGb: Int
    maxGpuCount: Int
    maxGpuCountCommunityCloud: Int
    maxGpuCountSecureCloud: Int
    minPodGpuCount: Int
    secureCloud: Boolean
    communityCloud: Boolean
    securePrice: Float
    communityPrice: Float
    secureSpotPrice: Float
    communitySpotPrice: Float
    oneMonthPrice: Float
    threeMonthPrice: Float
    sixMonthPrice: Float
    clusterPrice: Float
    nodeGroupDatacenters: [DataCenter]
    lowestPrice(input: GpuLowestPriceInput): LowestPrice
  }

  type LowestPrice {
    gpuName: String
    gpuTypeId: String
    minimumBidPrice: Float
    uninterruptablePrice: Float
    minVcpu: Int
    minMemory: Int
    stockStatus: String
    compliance: [String]
    countryCode: String
  }

  type DataCenter {
    id: String
    name: String
    location: String
    listed: Boolean
  }

  input SpecificsInput {
    dataCenterId: String
  }

  type Specifics {
    stockStatus: String
    securePrice: Float
    slsPrice: Float
  }

  type CpuFlavor {
    id: String
    displayName: String
    groupId: String
    minVcpu: Int
    maxVcpu: Int
    ramMultiplier: Int
    diskLimitPerVcpu: Int
    specifics(input: SpecificsInput): Specifics
  }

  type PodRuntimePorts {
    ip: String
    isIpPublic: Boolean
    privatePort: Int
    publicPort: Int
    type: String
  }

  type PodRuntime {
    uptimeInSeconds: Int
    ports: [PodRuntimePorts]
  }

  type PodMachineInfo {
    podHostId: String
    gpuDisplayName: String
    dataCenterId: String
    location: String
  }

  type Pod {
    id: String
    name: String
    imageName: String
    desiredStatus: String
    lastStatusChange: String
    costPerHr: Float
    gpuCount: Int
    vcpuCount: Float
    memoryInGb: Float
    containerDiskInGb: Int
    volumeInGb: Float
    volumeMountPath: String
    dockerArgs: String
    dockerId: String
    env: [String]
    port: Int
    ports: String
    podType: String
    machineId: String
    uptimeSeconds: Int
    clusterIp: String
    containerRegistryAuthId: String
    runtime: PodRuntime
    machine: PodMachineInfo
  }

  input EnvironmentVariableInput {
    key: String!
    value: String!
  }

  input PodFindAndDeployOnDemandInput {
${GPU_POD_DEPLOY_FIELDS}  }

  input PodRentInterruptableInput {
    bidPerGpu: Float!
${GPU_POD_DEPLOY_FIELDS}  }

  input deployCpuPodInput {
    name: String
    imageName: String!
    instanceId: String!
    cloudType: CloudTypeEnum
    deployCost: Float
    dataCenterId: String
    containerDiskInGb: Int
    dockerArgs: String
    ports: String
    volumeMountPath: String
    env: [EnvironmentVariableInput]
    startSsh: Boolean
    templateId: String
    networkVolumeId: String
    containerRegistryAuthId: String
  }

  input PodTerminateInput {
    podId: String!
  }

  input SaveRegistryAuthInput {
    name: String!
    username: String!
    password: String!
  }
`;
