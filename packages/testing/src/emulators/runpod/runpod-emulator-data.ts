/**
 * What the emulated RunPod sells: GPU types as its GraphQL `gpuTypes` lists them (RunPod's ids,
 * display names, memory, per-GPU prices of Secure and Community Cloud, as RunPod's pricing page
 * gave them), where each is in stock (Secure Cloud by data center id, Community Cloud by country
 * code, as RunPod's `lowestPrice` input names them) and how many GPUs are free there, the vCPUs
 * and memory a pod gets per GPU, and the CPU flavors of Secure Cloud (`cpuFlavors`).
 */

/** A data center of RunPod's Secure Cloud (`dataCenters`). */
export interface RunpodDataCenter {
  /** e.g. `US-TX-3`: what offers name as their region and pods deploy to (`dataCenterId`). */
  readonly id: string;
  readonly name: string;
  /** Listed data centers are the ones gpuhunt asks for. */
  readonly listed: boolean;
  /** Its country, ISO 3166 alpha-2. */
  readonly countryCode: string;
}

/** A GPU type and where it can be rented. */
export interface RunpodGpuTypeSpec {
  /** RunPod's id, the `gpuTypeId` of a deploy: `NVIDIA GeForce RTX 4090`. */
  readonly id: string;
  /** `RTX 4090`: what gpuhunt maps to dstack's GPU name. */
  readonly displayName: string;
  /** The name gpuhunt's published catalog gives it (`RTX4090`): what the emulator's catalog bucket writes. */
  readonly gpuhuntName: string;
  readonly manufacturer: 'Nvidia' | 'AMD';
  readonly memoryInGb: number;
  /** On-demand $/h of one GPU in Secure Cloud; null when not sold there. */
  readonly securePrice: number | null;
  /** On-demand $/h of one GPU in Community Cloud; null when not sold there. */
  readonly communityPrice: number | null;
  /** Spot (interruptible) $/h of one GPU, the lowest bid. */
  readonly secureSpotPrice: number | null;
  readonly communitySpotPrice: number | null;
  readonly maxGpuCount: number;
  /** vCPUs and GB of memory a pod gets per GPU (`lowestPrice.minVcpu`, `minMemory` scale with the count). */
  readonly vcpuPerGpu: number;
  readonly memoryGbPerGpu: number;
  /** Free GPUs per Secure Cloud data center id and per Community Cloud country code. */
  readonly stock: Readonly<Record<string, number>>;
  /** Instant Clusters: $/h of one GPU and the data centers that build them; absent when none. */
  readonly cluster?: { readonly pricePerGpu: number; readonly dataCenters: readonly string[] };
}

/** A CPU flavor of Secure Cloud (`cpuFlavors`), priced at its smallest size. */
export interface RunpodCpuFlavorSpec {
  /** e.g. `cpu3c`; offers are named `<id>-<vcpus>-<memory>` and deployed by that name (`instanceId`). */
  readonly id: string;
  readonly displayName: string;
  readonly groupId: string;
  readonly minVcpu: number;
  readonly maxVcpu: number;
  /** GB of memory per vCPU. */
  readonly ramMultiplier: number;
  /** GB of container disk per vCPU at most. */
  readonly diskLimitPerVcpu: number;
  /** $/h at `minVcpu`, per data center where it is in stock. */
  readonly securePriceByDataCenter: Readonly<Record<string, number>>;
}

export const DEFAULT_RUNPOD_DATA_CENTERS: readonly RunpodDataCenter[] = [
  { id: 'US-TX-3', name: 'US-TX-3', listed: true, countryCode: 'US' },
  { id: 'EU-RO-1', name: 'EU-RO-1', listed: true, countryCode: 'RO' },
  { id: 'CA-MTL-1', name: 'CA-MTL-1', listed: true, countryCode: 'CA' },
  // Not listed: gpuhunt skips it, so nothing is offered there.
  { id: 'US-DE-1', name: 'US-DE-1', listed: false, countryCode: 'US' },
];

/** Community Cloud's countries (`countryCodes`); RunPod lists a null among them, which gpuhunt skips. */
export const DEFAULT_RUNPOD_COUNTRY_CODES: readonly (string | null)[] = ['US', 'CZ', 'SE', null];

export const DEFAULT_RUNPOD_GPU_TYPES: readonly RunpodGpuTypeSpec[] = [
  {
    id: 'NVIDIA GeForce RTX 4090',
    displayName: 'RTX 4090',
    gpuhuntName: 'RTX4090',
    manufacturer: 'Nvidia',
    memoryInGb: 24,
    securePrice: 0.69,
    communityPrice: 0.34,
    secureSpotPrice: 0.35,
    communitySpotPrice: 0.2,
    maxGpuCount: 8,
    vcpuPerGpu: 6,
    memoryGbPerGpu: 41,
    stock: { 'US-TX-3': 8, 'EU-RO-1': 4, US: 8, CZ: 2 },
  },
  {
    id: 'NVIDIA RTX A4000',
    displayName: 'RTX A4000',
    gpuhuntName: 'A4000',
    manufacturer: 'Nvidia',
    memoryInGb: 16,
    securePrice: 0.25,
    communityPrice: 0.17,
    secureSpotPrice: 0.13,
    communitySpotPrice: 0.09,
    maxGpuCount: 4,
    vcpuPerGpu: 4,
    memoryGbPerGpu: 31,
    stock: { 'CA-MTL-1': 4, SE: 4 },
  },
  {
    id: 'NVIDIA RTX A6000',
    displayName: 'RTX A6000',
    gpuhuntName: 'A6000',
    manufacturer: 'Nvidia',
    memoryInGb: 48,
    securePrice: 0.49,
    communityPrice: 0.33,
    secureSpotPrice: 0.25,
    communitySpotPrice: 0.16,
    maxGpuCount: 8,
    vcpuPerGpu: 8,
    memoryGbPerGpu: 50,
    stock: { 'EU-RO-1': 8, 'CA-MTL-1': 2, US: 4 },
  },
  {
    id: 'NVIDIA L4',
    displayName: 'L4',
    gpuhuntName: 'L4',
    manufacturer: 'Nvidia',
    memoryInGb: 24,
    securePrice: 0.43,
    communityPrice: null,
    secureSpotPrice: 0.22,
    communitySpotPrice: null,
    maxGpuCount: 4,
    vcpuPerGpu: 12,
    memoryGbPerGpu: 50,
    stock: { 'US-TX-3': 4 },
  },
  {
    id: 'NVIDIA A100 80GB PCIe',
    displayName: 'A100 PCIe',
    gpuhuntName: 'A100',
    manufacturer: 'Nvidia',
    memoryInGb: 80,
    securePrice: 1.64,
    communityPrice: 1.19,
    secureSpotPrice: 0.82,
    communitySpotPrice: 0.6,
    maxGpuCount: 8,
    vcpuPerGpu: 8,
    memoryGbPerGpu: 117,
    stock: { 'EU-RO-1': 8, CZ: 2 },
  },
  {
    id: 'NVIDIA H100 80GB HBM3',
    displayName: 'H100 SXM',
    gpuhuntName: 'H100',
    manufacturer: 'Nvidia',
    memoryInGb: 80,
    securePrice: 2.69,
    communityPrice: 2.39,
    secureSpotPrice: 1.75,
    communitySpotPrice: 1.25,
    maxGpuCount: 8,
    vcpuPerGpu: 16,
    memoryGbPerGpu: 125,
    stock: { 'US-TX-3': 8, 'CA-MTL-1': 8, US: 1 },
    cluster: { pricePerGpu: 2.99, dataCenters: ['US-TX-3'] },
  },
];

export const DEFAULT_RUNPOD_CPU_FLAVORS: readonly RunpodCpuFlavorSpec[] = [
  {
    id: 'cpu3c',
    displayName: 'Compute-Optimized',
    groupId: 'cpu3',
    minVcpu: 2,
    maxVcpu: 32,
    ramMultiplier: 2,
    diskLimitPerVcpu: 10,
    securePriceByDataCenter: { 'EU-RO-1': 0.06, 'US-TX-3': 0.06 },
  },
  {
    id: 'cpu3g',
    displayName: 'General Purpose',
    groupId: 'cpu3',
    minVcpu: 2,
    maxVcpu: 32,
    ramMultiplier: 4,
    diskLimitPerVcpu: 10,
    securePriceByDataCenter: { 'EU-RO-1': 0.08 },
  },
];

/** What the emulator sells, with defaults for what a test leaves out. */
export interface RunpodEmulatorData {
  readonly dataCenters: readonly RunpodDataCenter[];
  readonly countryCodes: readonly (string | null)[];
  readonly gpuTypes: readonly RunpodGpuTypeSpec[];
  readonly cpuFlavors: readonly RunpodCpuFlavorSpec[];
}

export const DEFAULT_RUNPOD_EMULATOR_DATA: RunpodEmulatorData = {
  dataCenters: DEFAULT_RUNPOD_DATA_CENTERS,
  countryCodes: DEFAULT_RUNPOD_COUNTRY_CODES,
  gpuTypes: DEFAULT_RUNPOD_GPU_TYPES,
  cpuFlavors: DEFAULT_RUNPOD_CPU_FLAVORS,
};

/** Secure Cloud locations are data center ids (`CA-MTL-1`), Community Cloud ones country codes (`CA`). */
export function isSecureCloudLocation(location: string): boolean {
  return location.includes('-');
}
