import type { AcceleratorVendor, ComputeCapability, CpuArchitecture } from './gpus/known-accelerators.js';

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
  /** kebab-case markers that hide rows from consumers that do not understand them. */
  flags: string[];
  cpuArch: CpuArchitecture;
  /** Provider-specific data, a JSON object. */
  providerData: Record<string, unknown>;
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
