import type { CatalogItem, QueryFilter } from '../catalog-item.js';
import {
  ACCELERATOR_VENDORS,
  type AcceleratorVendor,
  type ComputeCapability,
  CPU_ARCHITECTURES,
  type CpuArchitecture,
  getComputeCapability,
} from '../gpus/known-accelerators.js';

/**
 * A query as a user or a config file writes it: single strings where gpuhunt accepts
 * them, enum values in any case, compute capability as `"8.0"`. Turn it into a
 * {@link QueryFilter} with {@link normalizeQueryFilter}.
 */
export interface QueryFilterInput
  extends Omit<
    QueryFilter,
    | 'provider'
    | 'gpuName'
    | 'cpuArch'
    | 'gpuVendor'
    | 'minComputeCapability'
    | 'maxComputeCapability'
    | 'allowedFlags'
  > {
  provider?: string | readonly string[];
  gpuName?: string | readonly string[];
  cpuArch?: string;
  gpuVendor?: string;
  minComputeCapability?: string | ComputeCapability;
  maxComputeCapability?: string | ComputeCapability;
  allowedFlags?: Iterable<string>;
}

const NUMERIC_FIELDS = [
  'minCpu',
  'maxCpu',
  'minMemory',
  'maxMemory',
  'minGpuCount',
  'maxGpuCount',
  'minGpuMemory',
  'maxGpuMemory',
  'minTotalGpuMemory',
  'maxTotalGpuMemory',
  'minDiskSize',
  'maxDiskSize',
  'minPrice',
  'maxPrice',
] as const;

/**
 * Validates a query and brings it to the canonical {@link QueryFilter} form, as gpuhunt's
 * `Catalog.query` does: strings become one-element lists, providers are lowercased,
 * vendor and CPU architecture are lowercased and checked, `"8.0"` becomes `[8, 0]`.
 * Throws an `Error` naming the field for an invalid value.
 */
export function normalizeQueryFilter(input: QueryFilterInput): QueryFilter {
  const filter: QueryFilter = {};
  for (const field of NUMERIC_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || Number.isNaN(value)) {
      throw new Error(`Invalid ${field} ${JSON.stringify(value)}: expected a number`);
    }
    filter[field] = value;
  }
  if (input.provider !== undefined && input.provider !== null) {
    filter.provider = toList('provider', input.provider).map((name) => name.toLowerCase());
  }
  if (input.gpuName !== undefined && input.gpuName !== null) {
    filter.gpuName = toList('gpuName', input.gpuName);
  }
  if (input.cpuArch) {
    filter.cpuArch = castEnum('cpuArch', input.cpuArch, CPU_ARCHITECTURES) as CpuArchitecture;
  }
  if (input.gpuVendor) {
    filter.gpuVendor = castEnum('gpuVendor', input.gpuVendor, ACCELERATOR_VENDORS) as AcceleratorVendor;
  }
  if (input.minComputeCapability !== undefined && input.minComputeCapability !== null) {
    filter.minComputeCapability = parseComputeCapability('minComputeCapability', input.minComputeCapability);
  }
  if (input.maxComputeCapability !== undefined && input.maxComputeCapability !== null) {
    filter.maxComputeCapability = parseComputeCapability('maxComputeCapability', input.maxComputeCapability);
  }
  if (input.spot !== undefined && input.spot !== null) {
    if (typeof input.spot !== 'boolean') {
      throw new Error(`Invalid spot ${JSON.stringify(input.spot)}: expected true or false`);
    }
    filter.spot = input.spot;
  }
  if (input.allowedFlags !== undefined && input.allowedFlags !== null) {
    if (typeof input.allowedFlags === 'string') {
      throw new Error('Invalid allowedFlags: expected a list of flags, not a string');
    }
    filter.allowedFlags = [...input.allowedFlags];
  }
  return filter;
}

function toList(field: string, value: string | readonly string[]): string[] {
  const list = typeof value === 'string' ? [value] : [...value];
  for (const entry of list) {
    if (typeof entry !== 'string') {
      throw new Error(`Invalid ${field} ${JSON.stringify(entry)}: expected a string`);
    }
  }
  return list;
}

function castEnum(field: string, value: string, allowed: readonly string[]): string {
  const lower = typeof value === 'string' ? value.toLowerCase() : value;
  if (!allowed.includes(lower)) {
    throw new Error(`Invalid ${field} ${JSON.stringify(value)}: expected one of ${allowed.join(', ')}`);
  }
  return lower;
}

/**
 * Parses a compute capability given as `"8.0"` (or `"8"`) or as a `[major, minor]` pair.
 * @param field named in the error message
 */
export function parseComputeCapability(field: string, value: string | ComputeCapability): ComputeCapability {
  if (typeof value === 'string') {
    const parts = value.trim().split('.');
    if (parts.length <= 2 && parts.every((part) => /^\d+$/.test(part))) {
      return [Number(parts[0]), parts.length === 2 ? Number(parts[1]) : 0];
    }
  } else if (
    Array.isArray(value) &&
    value.length === 2 &&
    value.every((part) => Number.isInteger(part) && part >= 0)
  ) {
    return [value[0], value[1]];
  }
  throw new Error(`Invalid ${field} ${JSON.stringify(value)}: expected "major.minor", such as "8.0"`);
}

/** Lexicographic comparison of two compute capabilities. */
export function compareComputeCapability(left: ComputeCapability, right: ComputeCapability): number {
  return left[0] - right[0] || left[1] - right[1];
}

function isBetween(value: number, min: number | undefined, max: number | undefined): boolean {
  return !(min !== undefined && value < min) && !(max !== undefined && value > max);
}

/**
 * Whether a catalog item satisfies a query, with gpuhunt's `matches()` semantics:
 * inclusive bounds; GPU constraints do not apply to GPU-less rows when the query asks
 * for `minGpuCount: 0` (so CPU rows are rejected by `gpuName`, `gpuVendor` or
 * `minGpuMemory` otherwise); compute capability holds only for NVIDIA GPUs known to the
 * GPU table; disk bounds apply only to rows with a disk size; with `allowedFlags`, every
 * flag of a row must be allowed.
 */
export function matches(item: CatalogItem, filter: QueryFilter): boolean {
  if (filter.provider !== undefined) {
    const provider = item.provider.toLowerCase();
    if (!filter.provider.some((name) => name.toLowerCase() === provider)) return false;
  }
  if (!isBetween(item.price, filter.minPrice, filter.maxPrice)) return false;
  if (filter.spot !== undefined && item.spot !== filter.spot) return false;
  if (filter.cpuArch && filter.cpuArch !== item.cpuArch) return false;
  if (!isBetween(item.cpu, filter.minCpu, filter.maxCpu)) return false;
  if (!isBetween(item.memory, filter.minMemory, filter.maxMemory)) return false;
  // gpuhunt: GPU constraints are not applied to GPU-less rows when the query allows 0 GPUs.
  if (!(filter.minGpuCount === 0 && item.gpuCount === 0)) {
    if (filter.gpuVendor && filter.gpuVendor !== item.gpuVendor) return false;
    if (!isBetween(item.gpuCount, filter.minGpuCount, filter.maxGpuCount)) return false;
    if (filter.gpuName !== undefined) {
      if (item.gpuName === null) return false;
      const name = item.gpuName.toLowerCase();
      if (!filter.gpuName.some((wanted) => wanted.toLowerCase() === name)) return false;
    }
    if (filter.minComputeCapability !== undefined || filter.maxComputeCapability !== undefined) {
      if (item.gpuVendor !== 'nvidia' || !item.gpuName) return false;
      const capability = getComputeCapability(item.gpuName);
      if (!capability || !isComputeCapabilityBetween(capability, filter)) return false;
    }
    const gpuMemory = item.gpuCount > 0 ? (item.gpuMemory ?? 0) : 0;
    if (!isBetween(gpuMemory, filter.minGpuMemory, filter.maxGpuMemory)) return false;
    if (!isBetween(item.gpuCount * gpuMemory, filter.minTotalGpuMemory, filter.maxTotalGpuMemory)) {
      return false;
    }
  }
  if (item.diskSize !== null && !isBetween(item.diskSize, filter.minDiskSize, filter.maxDiskSize)) {
    return false;
  }
  if (filter.allowedFlags !== undefined) {
    const allowed = filter.allowedFlags;
    if (item.flags.some((flag) => !allowed.includes(flag))) return false;
  }
  return true;
}

/** Whether a compute capability lies within the query's inclusive bounds. */
export function isComputeCapabilityBetween(capability: ComputeCapability, filter: QueryFilter): boolean {
  const { minComputeCapability: min, maxComputeCapability: max } = filter;
  if (min && compareComputeCapability(capability, min) < 0) return false;
  if (max && compareComputeCapability(capability, max) > 0) return false;
  return true;
}
