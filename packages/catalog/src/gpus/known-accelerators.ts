/**
 * The accelerator knowledge table, as in gpuhunt's `_internal/constraints.py`.
 * A name appears once per memory size it ships with (A100 40 and 80 GiB).
 */

export const ACCELERATOR_VENDORS = ['nvidia', 'amd', 'google', 'intel', 'tenstorrent'] as const;
export type AcceleratorVendor = (typeof ACCELERATOR_VENDORS)[number];

export const CPU_ARCHITECTURES = ['x86', 'arm'] as const;
export type CpuArchitecture = (typeof CPU_ARCHITECTURES)[number];

export type AmdArchitecture = 'CDNA' | 'CDNA2' | 'CDNA3' | 'CDNA4';

/** Compute capability as `[major, minor]`; compared lexicographically. */
export type ComputeCapability = readonly [number, number];

interface AcceleratorInfoBase {
  readonly name: string;
  /** Memory of one accelerator in GiB; 0 for TPUs, whose memory is per slice. */
  readonly memory: number;
}
export interface NvidiaGpuInfo extends AcceleratorInfoBase {
  readonly vendor: 'nvidia';
  readonly computeCapability: ComputeCapability;
}
export interface AmdGpuInfo extends AcceleratorInfoBase {
  readonly vendor: 'amd';
  readonly architecture: AmdArchitecture;
  readonly deviceIds: readonly string[];
}
export interface OtherAcceleratorInfo extends AcceleratorInfoBase {
  readonly vendor: 'google' | 'intel' | 'tenstorrent';
}
export type AcceleratorInfo = NvidiaGpuInfo | AmdGpuInfo | OtherAcceleratorInfo;

// [name, GiB sizes, compute capability]
const NVIDIA_ROWS: ReadonlyArray<readonly [string, readonly number[], string]> = [
  ['A10', [24], '8.6'],
  ['A16', [16], '8.6'],
  ['A40', [48], '8.6'],
  ['A100', [40, 80], '8.0'],
  ['A10G', [24], '8.6'],
  ['A4000', [16], '8.6'],
  ['A4500', [20], '8.6'],
  ['A5000', [24], '8.6'],
  ['A6000', [48], '8.6'],
  ['H100', [80], '9.0'],
  ['H100NVL', [94], '9.0'],
  ['H200', [141], '9.0'],
  ['H200NVL', [141], '9.0'],
  ['B200', [180], '10.0'],
  ['GB200', [186], '10.0'],
  ['B300', [270], '10.0'],
  ['L4', [24], '8.9'],
  ['L40', [48], '8.9'],
  ['L40S', [48], '8.9'],
  ['P100', [16], '6.0'],
  ['RTX2060', [6, 12], '7.5'],
  ['RTX2060SUPER', [8], '7.5'],
  ['RTX2070', [8], '7.5'],
  ['RTX2070SUPER', [8], '7.5'],
  ['RTX2080', [8], '7.5'],
  ['RTX2080SUPER', [8], '7.5'],
  ['RTX2080Ti', [11], '7.5'],
  ['RTX3050', [6, 8], '8.6'],
  ['RTX3060', [8, 12], '8.6'],
  ['RTX3060Ti', [8], '8.6'],
  ['RTX3070', [8], '8.6'],
  ['RTX3070Ti', [8], '8.6'],
  ['RTX3080', [10], '8.6'],
  ['RTX3080Ti', [12], '8.6'],
  ['RTX3090', [24], '8.6'],
  ['RTX3090Ti', [24], '8.6'],
  ['RTX4060', [8], '8.9'],
  ['RTX4060Ti', [8, 16], '8.9'],
  ['RTX4070', [12], '8.9'],
  ['RTX4070SUPER', [12], '8.9'],
  ['RTX4070Ti', [12], '8.9'],
  ['RTX4070TiSUPER', [16], '8.9'],
  ['RTX4080', [16], '8.9'],
  ['RTX4080SUPER', [16], '8.9'],
  ['RTX4090', [24], '8.9'],
  ['RTX5060', [8], '12.0'],
  ['RTX5060Ti', [8, 16], '12.0'],
  ['RTX5070', [12], '12.0'],
  ['RTX5070Ti', [16], '12.0'],
  ['RTX5080', [16], '12.0'],
  ['RTX5090', [32], '12.0'],
  ['RTX6000', [24], '7.5'],
  ['RTX2000Ada', [16], '8.9'],
  ['RTX4000Ada', [20], '8.9'],
  ['RTX6000Ada', [48], '8.9'],
  ['RTXPRO4500', [32], '12.0'],
  ['RTXPRO6000', [96], '12.0'],
  ['T4', [16], '7.5'],
  ['V100', [16, 32], '7.0'],
  ['GH200', [96], '9.0'],
];

// [name, GiB, architecture, PCI device ids]
const AMD_ROWS: ReadonlyArray<readonly [string, number, AmdArchitecture, readonly string[]]> = [
  ['MI100', 32, 'CDNA', ['738C']],
  ['MI210', 64, 'CDNA2', ['740F']],
  ['MI250', 128, 'CDNA2', ['740C']],
  ['MI250X', 128, 'CDNA2', ['7408']],
  ['MI300A', 128, 'CDNA3', ['74A0']],
  ['MI300X', 192, 'CDNA3', ['74A1', '74A9', '74B5', '74BD']],
  ['MI308X', 128, 'CDNA3', ['74A2', '74B6']],
  ['MI325X', 288, 'CDNA3', ['74A5']],
  ['MI350X', 288, 'CDNA4', ['75A0']],
  ['MI355X', 288, 'CDNA4', ['75A3']],
];

const TPU_NAMES = ['v2', 'v3', 'v4', 'v5p', 'v5litepod', 'v6e'];
const INTEL_ROWS: ReadonlyArray<readonly [string, number]> = [
  ['Gaudi', 32],
  ['Gaudi2', 96],
  ['Gaudi3', 128],
];
const TENSTORRENT_ROWS: ReadonlyArray<readonly [string, number]> = [
  ['n150', 12],
  ['n300', 24],
  ['tt-galaxy-wh', 12],
  ['p100a', 28],
  ['p150', 32],
  ['p300', 32],
  ['p300', 64],
  ['tt-galaxy-bh', 32],
];

function parseComputeCapability(text: string): ComputeCapability {
  const [major, minor] = text.split('.').map(Number);
  return [major ?? 0, minor ?? 0];
}

export const KNOWN_NVIDIA_GPUS: readonly NvidiaGpuInfo[] = NVIDIA_ROWS.flatMap(([name, sizes, cc]) =>
  sizes.map((memory) => ({
    vendor: 'nvidia' as const,
    name,
    memory,
    computeCapability: parseComputeCapability(cc),
  })),
);
export const KNOWN_AMD_GPUS: readonly AmdGpuInfo[] = AMD_ROWS.map(
  ([name, memory, architecture, deviceIds]) => ({
    vendor: 'amd',
    name,
    memory,
    architecture,
    deviceIds,
  }),
);
export const KNOWN_TPUS: readonly OtherAcceleratorInfo[] = TPU_NAMES.map((name) => ({
  vendor: 'google',
  name,
  memory: 0,
}));
export const KNOWN_INTEL_ACCELERATORS: readonly OtherAcceleratorInfo[] = INTEL_ROWS.map(([name, memory]) => ({
  vendor: 'intel',
  name,
  memory,
}));
export const KNOWN_TENSTORRENT_ACCELERATORS: readonly OtherAcceleratorInfo[] = TENSTORRENT_ROWS.map(
  ([name, memory]) => ({ vendor: 'tenstorrent', name, memory }),
);

export const KNOWN_ACCELERATORS: readonly AcceleratorInfo[] = [
  ...KNOWN_NVIDIA_GPUS,
  ...KNOWN_AMD_GPUS,
  ...KNOWN_TPUS,
  ...KNOWN_INTEL_ACCELERATORS,
  ...KNOWN_TENSTORRENT_ACCELERATORS,
];

const byLowerName = new Map<string, AcceleratorInfo[]>();
for (const info of KNOWN_ACCELERATORS) {
  const key = info.name.toLowerCase();
  const list = byLowerName.get(key) ?? [];
  list.push(info);
  byLowerName.set(key, list);
}

/** Known accelerators filtered by names (case-insensitive) and vendors; no argument means all. */
export function findAccelerators(
  options: { names?: readonly string[]; vendors?: readonly AcceleratorVendor[] } = {},
): AcceleratorInfo[] {
  const { names, vendors } = options;
  const candidates = names
    ? names.flatMap((name) => byLowerName.get(name.toLowerCase()) ?? [])
    : [...KNOWN_ACCELERATORS];
  return vendors ? candidates.filter((info) => vendors.includes(info.vendor)) : candidates;
}

/** The vendor of a known accelerator name (case-insensitive), or undefined when unknown. */
export function getGpuVendor(name: string): AcceleratorVendor | undefined {
  return byLowerName.get(name.toLowerCase())?.[0]?.vendor;
}

/** Compute capability of a known NVIDIA GPU: the first case-insensitive hit, as gpuhunt does. */
export function getComputeCapability(name: string): ComputeCapability | undefined {
  const info = byLowerName.get(name.toLowerCase())?.find((i): i is NvidiaGpuInfo => i.vendor === 'nvidia');
  return info?.computeCapability;
}

/**
 * Snaps a reported memory size (MiB) to a known size of that GPU when within 7 %,
 * else rounds to whole GiB. Clouds report usable memory (H100NVL 95830 MiB → 94 GiB).
 */
export function correctGpuMemoryGib(name: string, memoryMib: number): number {
  const reportedGib = memoryMib / 1024;
  for (const info of byLowerName.get(name.toLowerCase()) ?? []) {
    if (info.memory > 0 && Math.abs(reportedGib - info.memory) / info.memory <= 0.07) return info.memory;
  }
  return Math.round(reportedGib);
}

/** NVIDIA superchips (GH200, GB200…) pair a Grace ARM CPU with the GPU. */
export function isNvidiaSuperchip(name: string): boolean {
  return /^g[bh]\d+/i.test(name);
}
