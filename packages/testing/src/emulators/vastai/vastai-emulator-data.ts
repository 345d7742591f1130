/**
 * The asks the emulated Vast.ai marketplace starts with: machines modelled on the catalog's
 * Vast.ai sample (`/work/shared/catalog-data/vast-sample.csv`: H100 SXM in Czechia, RTX 4090s,
 * A100s…), each an offer as `POST /api/v0/bundles/` returns it, with every field gpuhunt and
 * dstack filter or read (units as Vast.ai gives them: `gpu_ram` and `cpu_ram` in MB,
 * `disk_space` in GB, prices in $/hour, `storage_cost` in $/GB/month). A few asks fail the
 * filters dstack sends (unverified, unreliable, old CUDA, no direct ports, community hosts), so a
 * search that honours the filters is visibly different from one that ignores them.
 */

/** One ask of the offer book, as the search answers it. */
export interface VastaiOffer {
  /** The ask id: what `PUT /asks/{id}/` rents and gpuhunt names the offer by. */
  readonly id: number;
  readonly ask_contract_id: number;
  readonly machine_id: number;
  readonly host_id: number;
  readonly gpu_name: string;
  readonly num_gpus: number;
  /** Per GPU, MB. */
  readonly gpu_ram: number;
  /** All GPUs, MB. */
  readonly gpu_total_ram: number;
  readonly gpu_arch: string;
  readonly cpu_name: string;
  readonly cpu_arch: string;
  /** The machine's vCPUs; null on some hosts (gpuhunt drops those). */
  readonly cpu_cores: number | null;
  /** The vCPUs this ask gets. */
  readonly cpu_cores_effective: number;
  /** The machine's RAM, MB. */
  readonly cpu_ram: number;
  /** GB. */
  readonly disk_space: number;
  readonly disk_name: string;
  readonly dph_base: number;
  readonly dph_total: number;
  /** $/GB/month. */
  readonly storage_cost: number;
  /** The lowest bid an interruptible rental of this ask may make, $/hour. */
  readonly min_bid: number;
  readonly inet_up: number;
  readonly inet_down: number;
  readonly inet_up_cost: number;
  readonly inet_down_cost: number;
  readonly reliability: number;
  readonly reliability2: number;
  readonly score: number;
  readonly dlperf: number;
  readonly total_flops: number;
  /** CUDA compute capability ×100 (890 for 8.9). */
  readonly compute_cap: number;
  readonly cuda_max_good: number;
  readonly driver_version: string;
  /** `City, CC` (or just the country). */
  readonly geolocation: string;
  readonly datacenter: boolean;
  readonly hosting_type: number;
  readonly verified: boolean;
  readonly external: boolean;
  readonly static_ip: boolean;
  readonly rentable: boolean;
  readonly rented: boolean;
  readonly direct_port_count: number;
  readonly duration: number;
  readonly pci_gen: number;
  readonly pcie_bw: number;
  readonly has_avx: number;
  readonly vms_enabled: boolean;
  readonly is_bid: boolean;
}

/** What a test gives to add an ask: the machine's shape and price; the rest is derived or defaulted. */
export interface VastaiAskSpec {
  readonly id: number;
  readonly gpuName: string;
  readonly numGpus: number;
  /** Per GPU, MB. */
  readonly gpuRamMb: number;
  readonly cpuCores: number | null;
  readonly cpuCoresEffective: number;
  readonly cpuRamMb: number;
  readonly diskSpaceGb: number;
  readonly dphBase: number;
  readonly minBid: number;
  readonly geolocation: string;
  readonly computeCap: number;
  readonly cudaMaxGood?: number;
  readonly reliability?: number;
  readonly score?: number;
  readonly verified?: boolean;
  readonly datacenter?: boolean;
  readonly directPortCount?: number;
  readonly inetDown?: number;
  readonly storageCost?: number;
}

/**
 * The location gpuhunt (and so dstack's `regions`) names an ask by: `City, CC` → `cc-city`,
 * lower case without spaces (`Hong Kong, HK` → `hk-hongkong`); a bare country stays itself.
 */
export function vastaiLocation(geolocation: string): string {
  const parts = geolocation.split(',').map((part) => part.trim().toLowerCase().replace(/\s+/g, ''));
  const country = parts.pop() ?? '';
  return parts.length === 0 ? country : `${country}-${parts.join('')}`;
}

/** The offer Vast.ai would list for `spec`: `dph_total` adds the disk's storage cost to `dph_base`. */
export function vastaiOffer(spec: VastaiAskSpec): VastaiOffer {
  const storageCost = spec.storageCost ?? 0.15;
  const diskCostPerHour = (spec.diskSpaceGb * storageCost) / 30 / 24;
  const datacenter = spec.datacenter ?? true;
  return {
    id: spec.id,
    ask_contract_id: spec.id,
    machine_id: 10_000 + (spec.id % 10_000),
    host_id: 200_000 + (spec.id % 1_000),
    gpu_name: spec.gpuName,
    num_gpus: spec.numGpus,
    gpu_ram: spec.gpuRamMb,
    gpu_total_ram: spec.gpuRamMb * spec.numGpus,
    gpu_arch: 'nvidia',
    cpu_name: 'AMD EPYC 7763 64-Core Processor',
    cpu_arch: 'amd64',
    cpu_cores: spec.cpuCores,
    cpu_cores_effective: spec.cpuCoresEffective,
    cpu_ram: spec.cpuRamMb,
    disk_space: spec.diskSpaceGb,
    disk_name: 'SAMSUNG MZQL23T8HCLS',
    dph_base: spec.dphBase,
    dph_total: Math.round((spec.dphBase + diskCostPerHour) * 1e6) / 1e6,
    storage_cost: storageCost,
    min_bid: spec.minBid,
    inet_up: 900,
    inet_down: spec.inetDown ?? 1800,
    inet_up_cost: 0.003,
    inet_down_cost: 0.003,
    reliability: spec.reliability ?? 0.995,
    reliability2: spec.reliability ?? 0.995,
    score: spec.score ?? 200,
    dlperf: 40 * spec.numGpus,
    total_flops: 80 * spec.numGpus,
    compute_cap: spec.computeCap,
    cuda_max_good: spec.cudaMaxGood ?? 12.8,
    driver_version: '570.124.06',
    geolocation: spec.geolocation,
    datacenter,
    hosting_type: datacenter ? 1 : 0,
    verified: spec.verified ?? true,
    external: false,
    static_ip: true,
    rentable: true,
    rented: false,
    direct_port_count: spec.directPortCount ?? 100,
    duration: 30,
    pci_gen: 4,
    pcie_bw: 24.5,
    has_avx: 1,
    vms_enabled: false,
    is_bid: false,
  };
}

/** The asks of a fresh emulator (their ids are stable: tests rent them by id). */
export const DEFAULT_VASTAI_EMULATOR_ASKS: readonly VastaiAskSpec[] = [
  {
    id: 21_000_101,
    gpuName: 'H100 SXM',
    numGpus: 1,
    gpuRamMb: 81_559,
    cpuCores: 64,
    cpuCoresEffective: 32,
    cpuRamMb: 131_072,
    diskSpaceGb: 500,
    dphBase: 1.8,
    minBid: 1.1,
    geolocation: 'Czechia, CZ',
    computeCap: 900,
    score: 520,
  },
  {
    id: 21_000_102,
    gpuName: 'H100 SXM',
    numGpus: 8,
    gpuRamMb: 81_559,
    cpuCores: 192,
    cpuCoresEffective: 192,
    cpuRamMb: 2_064_000,
    diskSpaceGb: 2_000,
    dphBase: 14.4,
    minBid: 9.6,
    geolocation: 'Florida, US',
    computeCap: 900,
    score: 610,
  },
  {
    id: 21_000_103,
    gpuName: 'RTX 4090',
    numGpus: 1,
    gpuRamMb: 24_564,
    cpuCores: 32,
    cpuCoresEffective: 16,
    cpuRamMb: 64_000,
    diskSpaceGb: 200,
    dphBase: 0.35,
    minBid: 0.2,
    geolocation: 'Quebec, CA',
    computeCap: 890,
    score: 310,
  },
  {
    id: 21_000_104,
    gpuName: 'RTX 4090',
    numGpus: 2,
    gpuRamMb: 24_564,
    cpuCores: 48,
    cpuCoresEffective: 48,
    cpuRamMb: 128_000,
    diskSpaceGb: 400,
    dphBase: 0.7,
    minBid: 0.42,
    geolocation: 'Hong Kong, HK',
    computeCap: 890,
    score: 290,
  },
  {
    id: 21_000_105,
    gpuName: 'A100 SXM4',
    numGpus: 1,
    gpuRamMb: 81_920,
    cpuCores: 32,
    cpuCoresEffective: 16,
    cpuRamMb: 256_000,
    diskSpaceGb: 300,
    dphBase: 0.95,
    minBid: 0.6,
    geolocation: 'Hungary, HU',
    computeCap: 800,
    score: 400,
  },
  {
    id: 21_000_106,
    gpuName: 'RTX 3090',
    numGpus: 1,
    gpuRamMb: 24_576,
    cpuCores: 16,
    cpuCoresEffective: 8,
    cpuRamMb: 32_000,
    diskSpaceGb: 150,
    dphBase: 0.18,
    minBid: 0.1,
    geolocation: 'Texas, US',
    computeCap: 860,
    score: 180,
    datacenter: false,
  },
  {
    id: 21_000_107,
    gpuName: 'RTX 4090',
    numGpus: 1,
    gpuRamMb: 24_564,
    cpuCores: 24,
    cpuCoresEffective: 12,
    cpuRamMb: 64_000,
    diskSpaceGb: 200,
    dphBase: 0.29,
    minBid: 0.15,
    geolocation: 'Thailand, TH',
    computeCap: 890,
    score: 150,
    verified: false,
  },
  {
    id: 21_000_108,
    gpuName: 'RTX 4090',
    numGpus: 1,
    gpuRamMb: 24_564,
    cpuCores: 24,
    cpuCoresEffective: 12,
    cpuRamMb: 64_000,
    diskSpaceGb: 200,
    dphBase: 0.27,
    minBid: 0.14,
    geolocation: 'Poland, PL',
    computeCap: 890,
    score: 140,
    reliability: 0.82,
  },
  {
    id: 21_000_109,
    gpuName: 'RTX 3060',
    numGpus: 1,
    gpuRamMb: 12_288,
    cpuCores: 8,
    cpuCoresEffective: 4,
    cpuRamMb: 16_000,
    diskSpaceGb: 100,
    dphBase: 0.06,
    minBid: 0.03,
    geolocation: 'Spain, ES',
    computeCap: 860,
    score: 90,
    cudaMaxGood: 12.2,
  },
  {
    id: 21_000_110,
    gpuName: 'L40S',
    numGpus: 1,
    gpuRamMb: 46_068,
    cpuCores: 32,
    cpuCoresEffective: 16,
    cpuRamMb: 128_000,
    diskSpaceGb: 300,
    dphBase: 0.79,
    minBid: 0.45,
    geolocation: 'Norway, NO',
    computeCap: 890,
    score: 330,
    directPortCount: 0,
  },
  {
    id: 21_000_111,
    gpuName: 'A100 PCIE',
    numGpus: 1,
    gpuRamMb: 40_960,
    cpuCores: null,
    cpuCoresEffective: 12,
    cpuRamMb: 96_000,
    diskSpaceGb: 250,
    dphBase: 0.7,
    minBid: 0.4,
    geolocation: 'Sweden, SE',
    computeCap: 800,
    score: 260,
  },
];
