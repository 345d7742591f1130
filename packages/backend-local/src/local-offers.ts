import { type CatalogItem, createCatalogItem, matches, type QueryFilter } from '@dstack/catalog';
import {
  catalogItemToOffer,
  type InstanceOfferWithAvailability,
  type Requirements,
  requirementsToQueryFilter,
  withAvailability,
} from '@dstack/core';
import type { HostResources } from './host-resources.js';
import { hostShortages, type LiveLocalInstance } from './local-capacity.js';

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
 * The local offers for `requirements`: the smallest share of the host that satisfies them (each
 * lower bound: CPUs, memory, GPUs; 1 CPU and 1 GiB when unbounded), then the whole host, each
 * when it satisfies them. A local instance takes the share it was launched with out of the
 * host's CPUs, memory and GPUs, so several fit side by side; the whole host is there for fleets
 * split into `blocks`, which need an instance that divides evenly. The disk is the host's file
 * system, shared and not divided. All are free. Each is `available` when it fits beside the
 * `live` instances now, else `busy`: the host exists but its own instances hold it, and it
 * frees as their jobs end. The launch checks again under the host's lock (`NoCapacityError`).
 */
export function getLocalOffers(
  requirements: Requirements | null | undefined,
  resources: HostResources,
  live: readonly LiveLocalInstance[] = [],
): InstanceOfferWithAvailability[] {
  const filter = requirementsToQueryFilter(requirements, { provider: LOCAL_BACKEND_TYPE });
  const host = hostCatalogItem(resources);
  const share = smallestShareItem(resources, filter);
  const items = share && sameSize(share, host) ? [host] : [share, host];
  return items.flatMap((item) => {
    if (!item || !matches(item, filter)) return [];
    const offer = catalogItemToOffer(item, LOCAL_BACKEND_TYPE, { requirements });
    if (offer === null) return [];
    const fitsNow = hostShortages(resources, live, offer.instance.resources).length === 0;
    return [withAvailability(offer, fitsNow ? 'available' : 'busy', { instance_runtime: 'shim' })];
  });
}

/** The CPUs and GiB of memory a local instance takes when the requirements set no lower bound. */
const UNBOUNDED_SHARE = { cpu: 1, memoryGib: 1 };

/**
 * The smallest share of the host that satisfies `filter`'s lower bounds, as a catalog row; null
 * when the host has less than they ask. GPUs are whole devices: the fewest that satisfy the GPU
 * bounds (their count, total memory), the host's first ones.
 */
function smallestShareItem(resources: HostResources, filter: QueryFilter): CatalogItem | null {
  const cpu = Math.ceil(filter.minCpu ?? UNBOUNDED_SHARE.cpu);
  const memoryGib = filter.minMemory ?? Math.min(UNBOUNDED_SHARE.memoryGib, resources.memoryGib);
  if (cpu > resources.cpuCount || memoryGib > resources.memoryGib) return null;
  // A GPU spec without a count (a name, a memory) is met from one GPU on: the loop gets there.
  for (let gpuCount = Math.ceil(filter.minGpuCount ?? 0); gpuCount <= resources.gpus.length; gpuCount++) {
    const item = hostCatalogItem({
      ...resources,
      cpuCount: cpu,
      memoryGib,
      gpus: resources.gpus.slice(0, gpuCount),
    });
    if (matches(item, filter)) return item;
  }
  return null;
}

function sameSize(left: CatalogItem, right: CatalogItem): boolean {
  return left.cpu === right.cpu && left.memory === right.memory && left.gpuCount === right.gpuCount;
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
 * agree with `getLocalOffers`. Upper bounds on CPUs, memory and the GPU count
 * never exclude the host: an instance takes a share of it that meets them.
 */
export function explainOfferMismatch(
  requirements: Requirements | null | undefined,
  resources: HostResources,
): string[] {
  const item = hostCatalogItem(resources);
  const filter = requirementsToQueryFilter(requirements, { provider: LOCAL_BACKEND_TYPE });
  const checked: QueryFilter = { ...filter, maxCpu: undefined, maxMemory: undefined, maxGpuCount: undefined };
  const reasons: string[] = [];
  for (const dimension of DIMENSIONS) {
    const partial = pick(checked, dimension.keys);
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
