import type { CatalogItem } from '../catalog-item.js';
import {
  ACCELERATOR_VENDORS,
  type AcceleratorVendor,
  type CpuArchitecture,
  correctGpuMemoryGib,
  findAccelerators,
} from '../gpus/known-accelerators.js';
import { pythonRound } from '../providers/python-round.js';
import { type ConversionReport, countEvent, createConversionReport } from './conversion-report.js';
import { parsePythonLiteral } from './python-literal.js';

/** AWS `GpuInfo.Gpus[0].Name` values that differ from the knowledge-table name. */
const AWS_GPU_NAME_ALIASES: Readonly<Record<string, string>> = {
  'A100-80GB': 'A100',
  'V100-32GB': 'V100',
  'Gaudi HL-205': 'Gaudi',
  'RTX PRO 4500': 'RTXPRO4500',
  'RTX PRO Server 6000': 'RTXPRO6000',
};

/** `GpuInfo.Gpus[0].Manufacturer` → vendor, for GPUs the knowledge table does not list. */
const AWS_MANUFACTURER_VENDORS: Readonly<Record<string, AcceleratorVendor>> = {
  NVIDIA: 'nvidia',
  AMD: 'amd',
  Habana: 'intel',
  Intel: 'intel',
};

/** gpuhunt hardcodes these: the EC2 API misreports them (p4de is listed as A100 40 GiB in old API answers). */
const AWS_GPU_OVERRIDES: Readonly<Record<string, { name: string; memory: number }>> = {
  'p4de.24xlarge': { name: 'A100', memory: 80 },
};

/** Graviton families (c7g, m6gd, g5g, t4g…): the `g` after the generation marks an ARM CPU. */
const GRAVITON_FAMILY = /^[a-z]+\d+g[a-z]*\./;

interface AwsGpu {
  name: string;
  memory: number;
  vendor: AcceleratorVendor;
}

interface AwsOfferGroup {
  instanceName: string;
  region: string;
  cpu: number;
  memory: number;
  gpuCount: number;
  gpu: AwsGpu | null;
  price: number | undefined;
  spotPrice: number | undefined;
}

function parseNumber(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * The GPU of one SkyPilot `GpuInfo` cell, normalised as gpuhunt's AWS collector does;
 * null when there is no GPU info (Inferentia, Trainium, FPGAs, Qualcomm AI100 and
 * CPU-only types), which gpuhunt publishes as gpu_count 0.
 */
export function awsGpuFromGpuInfo(instanceName: string, gpuInfo: string): AwsGpu | null {
  const override = AWS_GPU_OVERRIDES[instanceName];
  if (override) return { ...override, vendor: 'nvidia' };
  if (gpuInfo.trim() === '') return null;
  const parsed = parsePythonLiteral(gpuInfo) as {
    Gpus?: Array<{ Name?: string; Manufacturer?: string; MemoryInfo?: { SizeInMiB?: number } }>;
  };
  const first = parsed.Gpus?.[0];
  if (!first?.Name) return null;
  const rawName = first.Name;
  const aliased = AWS_GPU_NAME_ALIASES[rawName] ?? rawName;
  const known = findAccelerators({ names: [aliased] })[0];
  const name = known?.name ?? aliased;
  const vendor =
    known?.vendor ??
    AWS_MANUFACTURER_VENDORS[first.Manufacturer ?? ''] ??
    ACCELERATOR_VENDORS.find((candidate) => candidate === first.Manufacturer?.toLowerCase());
  if (!vendor) return null;
  const memoryMib = first.MemoryInfo?.SizeInMiB ?? 0;
  // AWS reports 22888 MiB for L4; gpuhunt pins it to the real 24 GiB.
  const memory = name === 'L4' ? 24 : correctGpuMemoryGib(name, memoryMib);
  return { name, memory, vendor };
}

function cpuArchitectureOf(instanceName: string): CpuArchitecture {
  return GRAVITON_FAMILY.test(instanceName) ? 'arm' : 'x86';
}

function toItem(group: AwsOfferGroup, price: number, spot: boolean): CatalogItem {
  return {
    provider: 'aws',
    instanceName: group.instanceName,
    location: group.region,
    price: pythonRound(price, 6),
    cpu: group.cpu,
    memory: group.memory,
    gpuCount: group.gpu ? group.gpuCount : 0,
    gpuName: group.gpu?.name ?? null,
    gpuMemory: group.gpu?.memory ?? null,
    spot,
    diskSize: null,
    gpuVendor: group.gpu?.vendor ?? null,
    flags: [],
    cpuArch: cpuArchitectureOf(group.instanceName),
    providerData: {},
  };
}

/**
 * Converts SkyPilot AWS rows (one per instance type and availability zone) into
 * the offers gpuhunt's AWS collector yields for the same facts: one on-demand row
 * per (type, region) and a spot copy priced at the minimum spot price over the
 * region's AZs, sorted by price (stable). gpuhunt's `filter()` is not applied here.
 */
export function convertAwsRows(
  records: readonly Record<string, string>[],
  report: ConversionReport = createConversionReport(),
): CatalogItem[] {
  const groups = new Map<string, AwsOfferGroup>();
  for (const record of records) {
    const instanceName = record.InstanceType ?? '';
    const region = record.Region ?? '';
    const key = `${instanceName}\u0000${region}`;
    let group = groups.get(key);
    if (!group) {
      const gpu = awsGpuFromGpuInfo(instanceName, record.GpuInfo ?? '');
      group = {
        instanceName,
        region,
        cpu: Math.trunc(parseNumber(record.vCPUs ?? '') ?? 0),
        memory: parseNumber(record.MemoryGiB ?? '') ?? 0,
        gpuCount: Math.trunc(parseNumber(record.AcceleratorCount ?? '') ?? 0),
        gpu,
        price: undefined,
        spotPrice: undefined,
      };
      if (!gpu && record.AcceleratorName)
        countEvent(report, 'aws: (type, region) with an accelerator but no GpuInfo (gpu_count 0)');
      groups.set(key, group);
    }
    const price = parseNumber(record.Price ?? '');
    if (price === undefined) countEvent(report, 'aws: source row without on-demand price (ignored)');
    else if (group.price === undefined) group.price = price;
    else if (group.price !== price)
      report.warnings.push(`aws: ${instanceName} in ${region} has AZ prices ${group.price} and ${price}`);
    const spotPrice = parseNumber(record.SpotPrice ?? '');
    if (spotPrice !== undefined && spotPrice > 0) {
      group.spotPrice = group.spotPrice === undefined ? spotPrice : Math.min(group.spotPrice, spotPrice);
    }
  }

  const onDemand: CatalogItem[] = [];
  const spot: CatalogItem[] = [];
  for (const group of groups.values()) {
    // gpuhunt builds spot offers as copies of on-demand ones: no on-demand price, no offer.
    if (group.price === undefined || group.price <= 0) {
      countEvent(report, 'aws: (type, region) without on-demand price (no offer)');
      continue;
    }
    onDemand.push(toItem(group, group.price, false));
    if (group.spotPrice !== undefined) spot.push(toItem(group, group.spotPrice, true));
  }
  return sortByPrice([...onDemand, ...spot]);
}

/** gpuhunt's `sorted(offers, key=price)`: stable, ascending. */
export function sortByPrice(items: readonly CatalogItem[]): CatalogItem[] {
  return [...items].sort((a, b) => a.price - b.price);
}
