/** What the Nebius emulator's tenancy has: regions with projects and subnets, platforms, prices. */

export interface NebiusPresetSpec {
  name: string;
  vcpu: number;
  memoryGib: number;
  gpus: number;
  clustering: boolean;
  /** Hourly on-demand price, USD; spot is `spotPrice` where the platform allows preemptibles. */
  price: number;
  spotPrice: number | null;
}

export interface NebiusPlatformSpec {
  name: string;
  humanName: string;
  gpuMemoryGb: number;
  presets: readonly NebiusPresetSpec[];
}

export interface NebiusProjectSpec {
  id: string;
  name: string;
  region: string;
}

export const DEFAULT_NEBIUS_TENANT_ID = 'tenant-e00emulator';

/** One project per region but eu-north1, which has two: the default one is the `default-…` one. */
export const DEFAULT_NEBIUS_PROJECTS: readonly NebiusProjectSpec[] = [
  { id: 'project-e00north1default', name: 'default-project-eu-north1', region: 'eu-north1' },
  { id: 'project-e00north1research', name: 'research', region: 'eu-north1' },
  { id: 'project-e01west1', name: 'main-eu-west1', region: 'eu-west1' },
  { id: 'project-u00central1', name: 'default-project-us-central1', region: 'us-central1' },
];

/** Platforms as Nebius lists them (names, presets), prices of the order of Nebius's list prices. */
export const DEFAULT_NEBIUS_PLATFORMS: readonly NebiusPlatformSpec[] = [
  {
    name: 'gpu-h100-sxm',
    humanName: 'NVIDIA® H100 NVLink with Intel Sapphire Rapids',
    gpuMemoryGb: 80,
    presets: [
      {
        name: '1gpu-16vcpu-200gb',
        vcpu: 16,
        memoryGib: 200,
        gpus: 1,
        clustering: false,
        price: 2.95,
        spotPrice: 1.25,
      },
      {
        name: '8gpu-128vcpu-1600gb',
        vcpu: 128,
        memoryGib: 1600,
        gpus: 8,
        clustering: true,
        price: 23.6,
        spotPrice: 10,
      },
    ],
  },
  {
    name: 'gpu-l40s-a',
    humanName: 'NVIDIA® L40S PCIe with Intel Ice Lake',
    gpuMemoryGb: 48,
    presets: [
      {
        name: '1gpu-8vcpu-32gb',
        vcpu: 8,
        memoryGib: 32,
        gpus: 1,
        clustering: false,
        price: 1.5456,
        spotPrice: null,
      },
      {
        name: '2gpu-64vcpu-384gb',
        vcpu: 64,
        memoryGib: 384,
        gpus: 2,
        clustering: false,
        price: 4.5536,
        spotPrice: null,
      },
    ],
  },
  {
    name: 'cpu-d3',
    humanName: 'Non-GPU AMD EPYC Genoa',
    gpuMemoryGb: 0,
    presets: [
      { name: '4vcpu-16gb', vcpu: 4, memoryGib: 16, gpus: 0, clustering: false, price: 0.1, spotPrice: 0.04 },
      { name: '8vcpu-32gb', vcpu: 8, memoryGib: 32, gpus: 0, clustering: false, price: 0.2, spotPrice: 0.08 },
    ],
  },
];

/** InfiniBand fabrics GPU clusters are made on: Nebius's documented ones for the emulated platforms. */
export const DEFAULT_NEBIUS_FABRICS: ReadonlyArray<{ name: string; platform: string; region: string }> = [
  { name: 'fabric-2', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-3', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-4', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-6', platform: 'gpu-h100-sxm', region: 'eu-north1' },
];
