import { type CatalogItem, createCatalogItem, matches, type QueryFilter } from '@dstack/catalog';
import {
  catalogItemToOffer,
  type InstanceOfferWithAvailability,
  type Requirements,
  requirementsToQueryFilter,
  withAvailability,
} from '@dstack/core';
import type { HostResources } from './host-resources.js';

/** The backend, region and instance type name of the one local offer. */
export const LOCAL_BACKEND_TYPE = 'local';
export const LOCAL_REGION = 'local';
export const LOCAL_INSTANCE_TYPE_NAME = 'local';

/** The host as a catalog row, so offers go through the same matching as every backend's. */
export function hostCatalogItem(resources: HostResources): CatalogItem {
  const firstGpu = resources.gpus[0];
  return createCatalogItem({
    provider: LOCAL_BACKEND_TYPE,
    instanceName: LOCAL_INSTANCE_TYPE_NAME,
    location: LOCAL_REGION,
    price: 0,
    cpu: resources.cpuCount,
    memory: resources.memoryGib,
    // A catalog row has one GPU model; hosts mixing models are described by their first.
    gpuCount: resources.gpus.length,
    gpuName: firstGpu?.name ?? null,
    gpuMemory: firstGpu?.memoryGib ?? null,
    gpuVendor: firstGpu ? firstGpu.vendor : null,
    diskSize: resources.diskGib,
    cpuArch: resources.cpuArch,
  });
}

/**
 * The local offer when the host satisfies `requirements`, else nothing: the
 * host as a free, available instance type `local` in region `local`, run by the shim.
 */
export function getLocalOffers(
  requirements: Requirements | null | undefined,
  resources: HostResources,
): InstanceOfferWithAvailability[] {
  const item = hostCatalogItem(resources);
  const filter = requirementsToQueryFilter(requirements, { provider: LOCAL_BACKEND_TYPE });
  if (!matches(item, filter)) return [];
  const offer = catalogItemToOffer(item, LOCAL_BACKEND_TYPE, { requirements });
  return offer === null ? [] : [withAvailability(offer, 'available', { instance_runtime: 'shim' })];
}

type FilterKey = keyof QueryFilter;

interface Dimension {
  /** The filter fields checked together. */
  keys: readonly FilterKey[];
  explain(filter: QueryFilter, item: CatalogItem): string;
}

/** GPU fields apply to a GPU-less host only with the count bounds (see `matches`). */
const GPU_COUNT_KEYS: readonly FilterKey[] = ['minGpuCount', 'maxGpuCount'];

const DIMENSIONS: readonly Dimension[] = [
  {
    keys: ['cpuArch'],
    explain: (filter, item) =>
      `cpu: requires the ${filter.cpuArch} architecture, the host is ${item.cpuArch}`,
  },
  {
    keys: ['minCpu', 'maxCpu'],
    explain: (filter, item) =>
      `cpu: requires ${formatCount(filter.minCpu, filter.maxCpu)} CPUs, the host has ${item.cpu}`,
  },
  {
    keys: ['minMemory', 'maxMemory'],
    explain: (filter, item) =>
      `memory: requires ${formatSize(filter.minMemory, filter.maxMemory)}, the host has ${formatGb(item.memory)}`,
  },
  {
    keys: ['minDiskSize', 'maxDiskSize'],
    explain: (filter, item) =>
      `disk: requires ${formatSize(filter.minDiskSize, filter.maxDiskSize)}, the host has ${formatGb(item.diskSize ?? 0)}`,
  },
  {
    keys: GPU_COUNT_KEYS,
    explain: (filter, item) =>
      `gpu: requires ${formatCount(filter.minGpuCount, filter.maxGpuCount)} GPUs, the host has ${item.gpuCount}`,
  },
  {
    keys: [...GPU_COUNT_KEYS, 'gpuVendor'],
    explain: (filter, item) =>
      `gpu: requires vendor ${filter.gpuVendor}, the host has ${item.gpuVendor ?? 'no GPUs'}`,
  },
  {
    keys: [...GPU_COUNT_KEYS, 'gpuName'],
    explain: (filter, item) =>
      `gpu: requires ${filter.gpuName?.join(' or ')}, the host has ${item.gpuName ?? 'no GPUs'}`,
  },
  {
    keys: [...GPU_COUNT_KEYS, 'minGpuMemory', 'maxGpuMemory'],
    explain: (filter, item) =>
      `gpu: requires ${formatSize(filter.minGpuMemory, filter.maxGpuMemory)} per GPU, the host has ${item.gpuCount > 0 ? formatGb(item.gpuMemory ?? 0) : 'no GPUs'}`,
  },
  {
    keys: [...GPU_COUNT_KEYS, 'minTotalGpuMemory', 'maxTotalGpuMemory'],
    explain: (filter, item) =>
      `gpu: requires ${formatSize(filter.minTotalGpuMemory, filter.maxTotalGpuMemory)} of GPU memory in total, the host has ${formatGb(item.gpuCount * (item.gpuMemory ?? 0))}`,
  },
  {
    keys: [...GPU_COUNT_KEYS, 'minComputeCapability'],
    explain: (filter, item) =>
      `gpu: requires compute capability ${filter.minComputeCapability?.join('.')} or newer, the host has ${item.gpuName ?? 'no GPUs'}`,
  },
  {
    keys: ['spot'],
    explain: () => 'spot: requires spot instances, the host is on-demand',
  },
];

/**
 * Why the host does not satisfy `requirements`, one human-readable reason per
 * unmet dimension (`gpu: requires 1..∞ GPUs, the host has 0`); empty when it does.
 * Each dimension is checked with the catalog matching alone, so the reasons
 * agree with `getLocalOffers`.
 */
export function explainOfferMismatch(
  requirements: Requirements | null | undefined,
  resources: HostResources,
): string[] {
  const item = hostCatalogItem(resources);
  const filter = requirementsToQueryFilter(requirements, { provider: LOCAL_BACKEND_TYPE });
  const reasons: string[] = [];
  for (const dimension of DIMENSIONS) {
    const partial = pick(filter, dimension.keys);
    // A dimension made only of GPU count bounds is checked by the count dimension itself.
    const ownKeys = dimension.keys.filter((key) => key in partial && !GPU_COUNT_KEYS.includes(key));
    if (dimension.keys !== GPU_COUNT_KEYS && ownKeys.length === 0) continue;
    if (!matches(item, partial)) reasons.push(dimension.explain(filter, item));
  }
  return reasons;
}

function pick(filter: QueryFilter, keys: readonly FilterKey[]): QueryFilter {
  const partial: Record<string, unknown> = {};
  for (const key of keys) if (filter[key] !== undefined) partial[key] = filter[key];
  return partial as QueryFilter;
}

function formatCount(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && min === max) return String(min);
  return `${min ?? 0}..${max ?? '∞'}`;
}

function formatSize(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && min === max) return formatGb(min);
  return `${min === undefined ? '' : formatGb(min)}..${max === undefined ? '' : formatGb(max)}`;
}

function formatGb(gib: number): string {
  return `${Number(gib.toFixed(1))}GB`;
}
