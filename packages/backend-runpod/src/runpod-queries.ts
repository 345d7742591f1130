/**
 * The GraphQL operations of the backend and of its catalog collector, with RunPod's field and
 * input names. They are dstack's and gpuhunt's operations, with variables in place of values
 * written into the query text (a value cannot break out of its string).
 */

/** The key's user: the read-only call that checks a key (dstack's `myself`). */
export const MYSELF_QUERY = 'query Myself { myself { id email } }';

/** The account's pods, to find one by name (a launch repeated with the same instance id). */
export const MY_PODS_QUERY = 'query MyPods { myself { pods { id name desiredStatus } } }';

/** One pod with its runtime ports (dstack's `pod` query, the fields it reads). */
export const POD_QUERY = `query Pod($input: PodFilter) {
  pod(input: $input) {
    id name desiredStatus podType imageName costPerHr gpuCount vcpuCount memoryInGb lastStatusChange machineId
    runtime { uptimeInSeconds ports { ip isIpPublic privatePort publicPort type } }
  }
}`;

const DEPLOYED_POD_FIELDS = 'id lastStatusChange imageName machine { podHostId }';

export const DEPLOY_ON_DEMAND_MUTATION = `mutation Deploy($input: PodFindAndDeployOnDemandInput) {
  podFindAndDeployOnDemand(input: $input) { ${DEPLOYED_POD_FIELDS} }
}`;

export const RENT_INTERRUPTABLE_MUTATION = `mutation Rent($input: PodRentInterruptableInput!) {
  podRentInterruptable(input: $input) { ${DEPLOYED_POD_FIELDS} }
}`;

export const DEPLOY_CPU_POD_MUTATION = `mutation DeployCpu($input: deployCpuPodInput!) {
  deployCpuPod(input: $input) { ${DEPLOYED_POD_FIELDS} }
}`;

export const TERMINATE_POD_MUTATION = `mutation Terminate($input: PodTerminateInput) {
  podTerminate(input: $input)
}`;

export const SAVE_REGISTRY_AUTH_MUTATION = `mutation SaveRegistryAuth($input: SaveRegistryAuthInput!) {
  saveRegistryAuth(input: $input) { id }
}`;

export const REGISTRY_AUTHS_QUERY = 'query RegistryAuths { myself { containerRegistryCreds { id name } } }';

export const DELETE_REGISTRY_AUTH_MUTATION = `mutation DeleteRegistryAuth($registryAuthId: String!) {
  deleteRegistryAuth(registryAuthId: $registryAuthId)
}`;

/** gpuhunt's: the GPU types with their vendor, to map ids to dstack's names. */
export const GPU_TYPE_NAMES_QUERY = 'query GpuTypes { gpuTypes { id manufacturer displayName memoryInGb } }';

/** gpuhunt's: where to ask (data centers, countries) and how many GPUs at most. */
export const GPU_LOCATIONS_QUERY = `query GpuTypes {
  countryCodes
  dataCenters { id name listed __typename }
  gpuTypes {
    maxGpuCount maxGpuCountCommunityCloud maxGpuCountSecureCloud minPodGpuCount
    id displayName memoryInGb secureCloud communityCloud __typename
  }
}`;

/** gpuhunt's: each GPU type's lowest price for a count at one location (or for clusters). */
export const GPU_PRICES_QUERY = `query GpuTypes($lowestPriceInput: GpuLowestPriceInput, $gpuTypesInput: GpuTypeFilter) {
  gpuTypes(input: $gpuTypesInput) {
    lowestPrice(input: $lowestPriceInput) {
      minimumBidPrice uninterruptablePrice minVcpu minMemory stockStatus compliance countryCode __typename
    }
    maxGpuCount id nodeGroupDatacenters { id } clusterPrice displayName memoryInGb
    securePrice communityPrice oneMonthPrice threeMonthPrice sixMonthPrice __typename
  }
}`;

/** gpuhunt's: the data centers CPU pods may run in. */
export const CPU_DATA_CENTERS_QUERY = 'query CpuDataCenters { dataCenters { id listed } }';

/** gpuhunt's: the CPU flavors with their price in one data center. */
export const CPU_FLAVORS_QUERY = `query CpuFlavors($dataCenterId: String) {
  cpuFlavors {
    id displayName groupId minVcpu maxVcpu ramMultiplier diskLimitPerVcpu
    specifics(input: { dataCenterId: $dataCenterId }) { stockStatus securePrice }
  }
}`;
