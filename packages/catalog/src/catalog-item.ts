import {
  type AcceleratorVendor,
  type ComputeCapability,
  type CpuArchitecture,
  getGpuVendor,
} from './gpus/known-accelerators.js';

/**
 * One offer in a price catalog: an instance type in a location at a price.
 * Field meanings follow gpuhunt's `CatalogItem` (names in camelCase).
 */
export interface CatalogItem {
  /** Provider name, lowercase (`aws`, `gcp`, `vastai`). */
  provider: string;
  instanceName: string;
  /** Region or zone, as the provider publishes it. */
  location: string;
  /** USD per hour. */
  price: number;
  cpu: number;
  /** GiB of RAM. */
  memory: number;
  gpuCount: number;
  /** Null exactly when `gpuCount` is 0. */
  gpuName: string | null;
  /** GiB of memory of one GPU; null exactly when `gpuCount` is 0. */
  gpuMemory: number | null;
  spot: boolean;
  /** GiB; null when the disk is chosen at launch. */
  diskSize: number | null;
  /** Null exactly when `gpuCount` is 0. */
  gpuVendor: AcceleratorVendor | null;
  /**
   * kebab-case markers that hide rows from consumers that do not understand them. An empty
   * list read from a catalog is shared and frozen: copy it to change it.
   */
  flags: string[];
  cpuArch: CpuArchitecture;
  /** Provider-specific data, a JSON object; an empty one read from a catalog is shared and frozen. */
  providerData: Record<string, unknown>;
}

/**
 * What {@link createCatalogItem} needs: the identity, price and size of an offer are
 * required; everything else is optional with gpuhunt's `CatalogItem` defaults.
 */
export interface CatalogItemInit {
  provider: string;
  instanceName: string;
  location: string;
  /** USD per hour. */
  price: number;
  cpu: number;
  /** GiB of RAM. */
  memory: number;
  /** Default 0. */
  gpuCount?: number;
  /** Default null. */
  gpuName?: string | null;
  /** GiB of memory of one GPU. Default null. */
  gpuMemory?: number | null;
  /** Default false. */
  spot?: boolean;
  /** GiB. Default null. */
  diskSize?: number | null;
  /** Default: the vendor of a known `gpuName` when `gpuCount` > 0, else null. */
  gpuVendor?: AcceleratorVendor | null;
  /** Default `[]`. */
  flags?: string[];
  /** Default `'x86'`. */
  cpuArch?: CpuArchitecture;
  /** Default `{}`. */
  providerData?: Record<string, unknown>;
}

/**
 * Builds a {@link CatalogItem}, the way provider packages should make their rows:
 * omitted fields take gpuhunt's defaults (no GPU, on-demand, disk chosen at launch,
 * no flags, x86, empty provider data). When `gpuCount` > 0 and no `gpuVendor` is given,
 * the vendor is looked up from `gpuName` among the known accelerators.
 *
 * The values are used as given: nothing is copied, rounded or otherwise checked.
 *
 * @throws Error when `gpuCount` > 0 and the vendor is neither given nor known for
 * `gpuName` (gpuhunt's `CatalogItem` raises a ValueError there).
 *
 * @example
 * createCatalogItem({
 *   provider: 'aws', instanceName: 'g5.xlarge', location: 'us-east-1', price: 1.006,
 *   cpu: 4, memory: 16, gpuCount: 1, gpuName: 'A10G', gpuMemory: 24,
 * }); // gpuVendor 'nvidia', spot false, diskSize null, flags [], cpuArch 'x86'
 */
export function createCatalogItem(init: CatalogItemInit): CatalogItem {
  const gpuCount = init.gpuCount ?? 0;
  const gpuName = init.gpuName ?? null;
  let gpuVendor = init.gpuVendor ?? null;
  if (gpuVendor === null && gpuCount > 0) {
    gpuVendor = (gpuName === null ? undefined : getGpuVendor(gpuName)) ?? null;
    if (gpuVendor === null) {
      throw new Error(
        `Catalog item ${init.instanceName}: gpuVendor is required with ${gpuCount} GPU(s) of ` +
          `${gpuName === null ? 'no name' : `unknown name ${JSON.stringify(gpuName)}`}`,
      );
    }
  }
  return {
    provider: init.provider,
    instanceName: init.instanceName,
    location: init.location,
    price: init.price,
    cpu: init.cpu,
    memory: init.memory,
    gpuCount,
    gpuName,
    gpuMemory: init.gpuMemory ?? null,
    spot: init.spot ?? false,
    diskSize: init.diskSize ?? null,
    gpuVendor,
    flags: init.flags ?? [],
    cpuArch: init.cpuArch ?? 'x86',
    providerData: init.providerData ?? {},
  };
}

/**
 * A catalog query. Every field is optional; bounds are inclusive.
 * Semantics follow gpuhunt's `QueryFilter` and `matches()`.
 */
export interface QueryFilter {
  /** Provider names, case-insensitive. */
  provider?: string[];
  cpuArch?: CpuArchitecture;
  minCpu?: number;
  maxCpu?: number;
  minMemory?: number;
  maxMemory?: number;
  minGpuCount?: number;
  maxGpuCount?: number;
  /** GiB per GPU. */
  minGpuMemory?: number;
  maxGpuMemory?: number;
  /** GiB over all GPUs of the offer. */
  minTotalGpuMemory?: number;
  maxTotalGpuMemory?: number;
  minDiskSize?: number;
  maxDiskSize?: number;
  minPrice?: number;
  maxPrice?: number;
  minComputeCapability?: ComputeCapability;
  maxComputeCapability?: ComputeCapability;
  gpuVendor?: AcceleratorVendor;
  /** GPU names, case-insensitive. */
  gpuName?: string[];
  spot?: boolean;
  /** Undefined allows every flag; otherwise every flag of a row must be listed (`[]` rejects flagged rows). */
  allowedFlags?: readonly string[];
}
