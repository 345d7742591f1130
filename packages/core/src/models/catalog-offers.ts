import type { CatalogItem, QueryFilter } from '@dstack/catalog';
import type { BackendType } from './backend-type.js';
import type { Gpu, InstanceOffer } from './instances.js';
import type { Range, Requirements } from './requirements.js';

/**
 * Catalog flags this version of dstack understands; rows with any other flag
 * stay hidden (gpuhunt hides offers older dstack versions cannot provision).
 */
export const SUPPORTED_CATALOG_FLAGS: readonly string[] = [
  'oci-spot',
  'lambda-arm',
  'runpod-cpu',
  'runpod-cluster',
];

/** dstack's default disk requirement, `100GB..`. */
export const DEFAULT_DISK_SIZE_RANGE: Range = { min: 100, max: null };

/** Catalog provider names that differ from the backend type. */
const CATALOG_PROVIDER_BY_BACKEND: Readonly<Record<string, string>> = { lambda: 'lambdalabs' };

/** The catalog provider name of a backend (`lambda` → `lambdalabs`, others unchanged). */
export function catalogProviderOf(backend: BackendType): string {
  return CATALOG_PROVIDER_BY_BACKEND[backend] ?? backend;
}

function setRange(
  filter: QueryFilter,
  range: Range | null | undefined,
  minKey: keyof QueryFilter,
  maxKey: keyof QueryFilter,
) {
  if (!range) return;
  if (range.min != null) (filter as Record<string, unknown>)[minKey] = range.min;
  if (range.max != null) (filter as Record<string, unknown>)[maxKey] = range.max;
}

/**
 * The catalog query for `requirements` (dstack's `requirements_to_query_filter`):
 * cpu arch and count, memory, disk, GPU vendor/names/count/memory/total memory,
 * minimum compute capability, max price and spot. GB in requirements and GiB in
 * the catalog are the same unit in dstack, so numbers pass through unchanged.
 * Null and absent values leave the filter open.
 */
export function requirementsToQueryFilter(
  requirements: Requirements | null | undefined,
  options: { provider?: string | readonly string[]; allowedFlags?: readonly string[] } = {},
): QueryFilter {
  const filter: QueryFilter = { allowedFlags: options.allowedFlags ?? SUPPORTED_CATALOG_FLAGS };
  if (options.provider !== undefined) {
    filter.provider = typeof options.provider === 'string' ? [options.provider] : [...options.provider];
  }
  if (!requirements) return filter;

  if (requirements.max_price != null) filter.maxPrice = requirements.max_price;
  if (requirements.spot != null) filter.spot = requirements.spot;

  const resources = requirements.resources;
  if (resources.cpu.arch != null) filter.cpuArch = resources.cpu.arch;
  setRange(filter, resources.cpu.count, 'minCpu', 'maxCpu');
  setRange(filter, resources.memory, 'minMemory', 'maxMemory');
  setRange(filter, resources.disk?.size, 'minDiskSize', 'maxDiskSize');

  const gpu = resources.gpu;
  if (gpu) {
    if (gpu.vendor != null) filter.gpuVendor = gpu.vendor;
    if (gpu.name != null) filter.gpuName = [...gpu.name];
    setRange(filter, gpu.count, 'minGpuCount', 'maxGpuCount');
    setRange(filter, gpu.memory, 'minGpuMemory', 'maxGpuMemory');
    setRange(filter, gpu.total_memory, 'minTotalGpuMemory', 'maxTotalGpuMemory');
    if (gpu.compute_capability != null) {
      filter.minComputeCapability = [gpu.compute_capability[0], gpu.compute_capability[1]];
    }
  }
  return filter;
}

function intersect(a: Range, b: Range): Range | null {
  const min = a.min == null ? b.min : b.min == null ? a.min : Math.max(a.min, b.min);
  const max = a.max == null ? b.max : b.max == null ? a.max : Math.min(a.max, b.max);
  if (min != null && max != null && min > max) return null;
  return { min: min ?? null, max: max ?? null };
}

export interface CatalogItemToOfferOptions {
  /** Gives the disk size when the item has none (the minimum of the disk requirement). */
  requirements?: Requirements | null;
  /** Disk sizes (GB) the backend can attach; default `1GB..`. */
  configurableDiskSize?: Range;
}

/**
 * A catalog row as an `InstanceOffer` (dstack's `catalog_item_to_offer`):
 * memory GiB → MiB, one `Gpu` per GPU, `backend_data` = the item's provider data.
 * When the item has no fixed disk, the disk is the minimum of the disk
 * requirement (default `100GB..`) within `configurableDiskSize`; when those do
 * not intersect, returns null (the backend cannot offer that disk).
 */
export function catalogItemToOffer(
  item: CatalogItem,
  backend: BackendType,
  options: CatalogItemToOfferOptions = {},
): InstanceOffer | null {
  let diskSizeGib: number;
  if (item.diskSize) {
    diskSizeGib = item.diskSize;
  } else {
    const wanted = options.requirements?.resources.disk?.size ?? DEFAULT_DISK_SIZE_RANGE;
    const range = intersect(wanted, options.configurableDiskSize ?? { min: 1, max: null });
    if (range === null) return null;
    diskSizeGib =
      range.min ?? Math.min(DEFAULT_DISK_SIZE_RANGE.min ?? 0, range.max ?? Number.POSITIVE_INFINITY);
  }

  const gpus: Gpu[] = [];
  if (item.gpuCount > 0) {
    const gpu: Gpu = {
      name: item.gpuName ?? '',
      memory_mib: Math.round((item.gpuMemory ?? 0) * 1024),
      vendor: item.gpuVendor ?? 'nvidia',
    };
    for (let i = 0; i < item.gpuCount; i++) gpus.push({ ...gpu });
  }

  return {
    backend,
    instance: {
      name: item.instanceName,
      resources: {
        cpus: item.cpu,
        memory_mib: Math.round(item.memory * 1024),
        gpus,
        spot: item.spot,
        disk: { size_mib: Math.round(diskSizeGib * 1024) },
        cpu_arch: item.cpuArch,
      },
    },
    region: item.location,
    price: item.price,
    backend_data: { ...item.providerData },
  };
}

/** Anything that answers catalog queries, e.g. `@dstack/catalog`'s `Catalog`. */
export interface CatalogQueryable {
  query(filter: QueryFilter): readonly CatalogItem[] | Promise<readonly CatalogItem[]>;
}

export interface GetCatalogOffersOptions extends CatalogItemToOfferOptions {
  /** Keep only these regions/zones (`item.location`); undefined keeps all. */
  locations?: readonly string[] | null;
  /** Extra filter on the built offers (e.g. supported instance families). */
  extraFilter?: (offer: InstanceOffer) => boolean;
  /** Catalog provider name; default `catalogProviderOf(backend)`. */
  provider?: string;
}

/**
 * Offers of `backend` from a catalog matching the requirements (dstack's
 * `get_catalog_offers`), in catalog order (by price).
 */
export async function getCatalogOffers(
  catalog: CatalogQueryable,
  backend: BackendType,
  options: GetCatalogOffersOptions = {},
): Promise<InstanceOffer[]> {
  const filter = requirementsToQueryFilter(options.requirements, {
    provider: options.provider ?? catalogProviderOf(backend),
  });
  const locations = options.locations == null ? null : new Set(options.locations);
  const offers: InstanceOffer[] = [];
  for (const item of await catalog.query(filter)) {
    if (locations && !locations.has(item.location)) continue;
    const offer = catalogItemToOffer(item, backend, options);
    if (offer === null) continue;
    if (options.extraFilter && !options.extraFilter(offer)) continue;
    offers.push(offer);
  }
  return offers;
}
