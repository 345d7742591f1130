/**
 * gpuhunt's Vast.ai provider: the search body for a catalog query, the local re-check of every
 * answer against it (Vast's search is loose), and each ask as catalog rows (on-demand, plus a
 * spot copy at the ask's minimum bid).
 */
import { type CatalogItem, correctGpuMemoryGib, createCatalogItem, type QueryFilter } from '@dstack/catalog';
import type { VastAiOffer, VastAiSearchBody } from './vastai-api.js';
import { VAST_AI_BACKEND_TYPE } from './vastai-config.js';
import { fromVastAiGpuName, toVastAiGpuNames } from './vastai-gpu-names.js';

/** Vast.ai counts RAM in MB. */
const KILO = 1000;
/** Asks a search returns when no GPU name could be mapped (gpuhunt's). */
const UNMAPPED_GPU_LIMIT = 3000;
/** Hours in Vast.ai's storage month ($/GB/month → $/h). */
const HOURS_PER_MONTH = 30 * 24;

export interface VastAiSearchOptions {
  /** Whether community hosts are offered too (else `datacenter: {eq: true}`). Default true. */
  communityCloud?: boolean;
  /** Filters merged into the body last, e.g. dstack's quality bar (`VAST_AI_QUALITY_FILTERS`). */
  extraFilters?: VastAiSearchBody;
}

/** dstack's quality bar for the asks it rents: reliable, verified hosts with a recent CUDA and a direct port. */
export const VAST_AI_QUALITY_FILTERS: VastAiSearchBody = Object.freeze({
  reliability2: { gte: 0.9 },
  verified: { eq: true },
  cuda_max_good: { gte: 12.8 },
  direct_port_count: { gte: 1 },
});

type Filters = Record<string, Record<string, unknown>>;

function put(filters: Filters, field: string, operator: string, value: unknown): void {
  filters[field] ??= {};
  (filters[field] as Record<string, unknown>)[operator] = value;
}

/** gpuhunt's `compute_cap`: (8, 0) → "800", (7, 5) → "750". */
function computeCapability([major, minor]: readonly [number, number]): string {
  return `${major}${String(minor).padEnd(2, '0')}`;
}

/** The `POST /bundles/` body for a query (gpuhunt's `make_filters` plus its fixed fields). */
export function buildSearchBody(filter: QueryFilter, options: VastAiSearchOptions = {}): VastAiSearchBody {
  const filters: Filters = {};
  if (filter.minCpu !== undefined) put(filters, 'cpu_cores', 'gte', filter.minCpu);
  if (filter.maxCpu !== undefined) put(filters, 'cpu_cores', 'lte', filter.maxCpu);
  if (filter.minMemory !== undefined) put(filters, 'cpu_ram', 'gte', filter.minMemory * KILO);
  if (filter.maxMemory !== undefined) put(filters, 'cpu_ram', 'lte', filter.maxMemory * KILO);
  if (filter.minGpuCount !== undefined) put(filters, 'num_gpus', 'gte', filter.minGpuCount);
  if (filter.maxGpuCount !== undefined) put(filters, 'num_gpus', 'lte', filter.maxGpuCount);
  const vastNames = (filter.gpuName ?? []).flatMap((name) => toVastAiGpuNames(name));
  if (vastNames.length > 0) put(filters, 'gpu_name', 'in', vastNames);
  // Vast reports usable GPU memory; gpuhunt's 7 % margin matches correctGpuMemoryGib's.
  if (filter.minGpuMemory !== undefined) put(filters, 'gpu_ram', 'gte', filter.minGpuMemory * 1024 * 0.93);
  if (filter.maxGpuMemory !== undefined) put(filters, 'gpu_ram', 'lte', filter.maxGpuMemory * 1024 * 1.07);
  if (filter.minDiskSize !== undefined) put(filters, 'disk_space', 'gte', filter.minDiskSize);
  if (filter.maxDiskSize !== undefined) put(filters, 'disk_space', 'lte', filter.maxDiskSize);
  if (filter.minPrice !== undefined) put(filters, 'dph_total', 'gte', filter.minPrice);
  if (filter.maxPrice !== undefined) put(filters, 'dph_total', 'lte', filter.maxPrice);
  if (filter.minComputeCapability !== undefined)
    put(filters, 'compute_capability', 'gte', computeCapability(filter.minComputeCapability));
  if (filter.maxComputeCapability !== undefined)
    put(filters, 'compute_capability', 'lte', computeCapability(filter.maxComputeCapability));
  if (options.communityCloud === false) put(filters, 'datacenter', 'eq', true);
  put(filters, 'rentable', 'eq', true);
  put(filters, 'rented', 'eq', false);
  for (const [field, constraints] of Object.entries(options.extraFilters ?? {})) {
    for (const [operator, value] of Object.entries(constraints as Record<string, unknown>)) {
      put(filters, field, operator, value);
    }
  }
  const body: VastAiSearchBody = { ...filters, order: [['score', 'desc']] };
  if ((filter.gpuName?.length ?? 0) > 0 && vastNames.length === 0) body.limit = UNMAPPED_GPU_LIMIT;
  return body;
}

function compare(actual: unknown, operator: string, expected: unknown): boolean {
  switch (operator) {
    case 'eq':
      return actual === expected;
    case 'neq':
      return actual !== expected;
    case 'in':
      return !Array.isArray(expected) || expected.includes(actual);
    case 'notin':
      return !Array.isArray(expected) || !expected.includes(actual);
  }
  // Numbers, or strings compared as numbers (`compute_capability` "800").
  const left = Number(actual);
  const right = Number(expected);
  if (!Number.isFinite(left) || !Number.isFinite(right)) return false;
  if (operator === 'lt') return left < right;
  if (operator === 'lte') return left <= right;
  if (operator === 'gte') return left >= right;
  if (operator === 'gt') return left > right;
  return true;
}

/** Whether the ask meets every constraint of the body (a field the ask lacks is not checked, as gpuhunt). */
export function satisfiesSearchBody(offer: VastAiOffer, body: VastAiSearchBody): boolean {
  for (const [field, constraints] of Object.entries(body)) {
    if (field === 'order' || field === 'limit' || field === 'type') continue;
    if (!(field in offer) || typeof constraints !== 'object' || constraints === null) continue;
    for (const [operator, value] of Object.entries(constraints)) {
      if (!compare(offer[field], operator, value)) return false;
    }
  }
  return true;
}

/** gpuhunt's location: "Hong Kong, HK" → `hk-hongkong`; "" when unknown. */
export function vastAiLocation(geolocation: string | null | undefined): string {
  if (!geolocation) return '';
  const parts = geolocation.replace(', ', ',').split(',');
  const location = parts.length === 2 ? `${parts[1]}-${parts[0]}` : geolocation;
  return location.toLowerCase().replaceAll(' ', '');
}

/** What an offer's `providerData` (and so the dstack offer's `backend_data`) carries. */
export interface VastAiOfferData {
  /** The ask to rent. */
  ask_id: number;
  /** The ask's minimum bid, $/h (spot rows: the bid `runJob` places). */
  min_bid: number | null;
}

/**
 * The rows of one ask: on-demand at `dph_base` plus the disk's storage cost, and, when the ask has
 * a minimum bid, a spot copy at that bid plus the disk; cheapest first. Null-CPU asks give none.
 * The disk is the query's minimum disk when given (what `runJob` rents), else the host's.
 */
export function offerToCatalogItems(offer: VastAiOffer, filter: QueryFilter): CatalogItem[] {
  if (!offer.cpu_cores) return [];
  const memory = Math.trunc((offer.cpu_ram * offer.cpu_cores_effective) / offer.cpu_cores / KILO);
  const disk = filter.minDiskSize ?? offer.disk_space;
  const diskCost = (disk * offer.storage_cost) / HOURS_PER_MONTH;
  const gpuCount = offer.num_gpus ?? 0;
  const gpuName = gpuCount > 0 ? fromVastAiGpuName(offer.gpu_name) : null;
  const minBid = typeof offer.min_bid === 'number' ? offer.min_bid : null;
  const data: VastAiOfferData = { ask_id: offer.id, min_bid: minBid };
  const base = {
    provider: VAST_AI_BACKEND_TYPE,
    instanceName: String(offer.id),
    location: vastAiLocation(offer.geolocation),
    cpu: Math.trunc(offer.cpu_cores_effective),
    memory,
    gpuCount,
    gpuName,
    gpuMemory: gpuName === null ? null : correctGpuMemoryGib(gpuName, offer.gpu_ram),
    gpuVendor: gpuCount > 0 ? ('nvidia' as const) : null,
    diskSize: disk,
    providerData: { ...data },
  };
  const items = [createCatalogItem({ ...base, price: round5(offer.dph_base + diskCost) })];
  if (minBid !== null) {
    items.push(createCatalogItem({ ...base, price: round5(minBid + diskCost), spot: true }));
    items.sort((left, right) => left.price - right.price);
  }
  return items;
}

function round5(value: number): number {
  return Math.round(value * 1e5) / 1e5;
}
