import { type AcceleratorVendor, type CatalogItem, createCatalogItem, matches } from '@dstack/catalog';
import {
  catalogItemToOffer,
  type InstanceOfferWithAvailability,
  type Requirements,
  requirementsToQueryFilter,
  withAvailability,
} from '@dstack/core';

/** One instance type of the fake cloud. */
export interface FakeInstanceType {
  name: string;
  cpus: number;
  memoryGib: number;
  /** USD per hour, on demand. */
  price: number;
  /** GPUs of the type; default none. */
  gpu?: { name: string; memoryGib: number; count: number; vendor?: AcceleratorVendor };
  /** Default 100 GiB. */
  diskGib?: number;
}

/** The fake cloud's capacity: which instance types exist, where, and whether as spot. */
export interface FakeCapacity {
  /** Default `DEFAULT_FAKE_INSTANCE_TYPES` (three CPU types and one GPU type). */
  instanceTypes?: readonly FakeInstanceType[];
  /**
   * Regions where every type is offered; the backend config's `regions`
   * narrows them. Default `['fake-region-1', 'fake-region-2']`.
   */
  regions?: readonly string[];
  /**
   * `on-demand`: no spot offers; `spot`: only spot; `both`: each type twice.
   * Default `both`.
   */
  spot?: 'on-demand' | 'spot' | 'both';
  /** Spot price as a fraction of the on-demand price. Default 0.3. */
  spotPriceRatio?: number;
  /**
   * Regions whose offers are reported `not_available` (listed, not provisionable).
   * Default none.
   */
  unavailableRegions?: readonly string[];
}

export const DEFAULT_FAKE_INSTANCE_TYPES: readonly FakeInstanceType[] = [
  { name: 'fake.small', cpus: 2, memoryGib: 4, price: 0.05 },
  { name: 'fake.medium', cpus: 4, memoryGib: 16, price: 0.2 },
  { name: 'fake.large', cpus: 16, memoryGib: 64, price: 0.8 },
  { name: 'fake.gpu', cpus: 8, memoryGib: 32, price: 1.5, gpu: { name: 'A100', memoryGib: 80, count: 1 } },
];

export const DEFAULT_FAKE_REGIONS: readonly string[] = ['fake-region-1', 'fake-region-2'];

/** The fake cloud's catalog, one row per type, region and spot variant. */
export function fakeCatalog(backendType: string, capacity: FakeCapacity = {}): CatalogItem[] {
  const types = capacity.instanceTypes ?? DEFAULT_FAKE_INSTANCE_TYPES;
  const regions = capacity.regions ?? DEFAULT_FAKE_REGIONS;
  const spotMode = capacity.spot ?? 'both';
  const spotVariants = spotMode === 'both' ? [false, true] : [spotMode === 'spot'];
  const ratio = capacity.spotPriceRatio ?? 0.3;
  const items: CatalogItem[] = [];
  for (const type of types) {
    for (const region of regions) {
      for (const spot of spotVariants) {
        items.push(
          createCatalogItem({
            provider: backendType,
            instanceName: type.name,
            location: region,
            price: roundPrice(spot ? type.price * ratio : type.price),
            cpu: type.cpus,
            memory: type.memoryGib,
            gpuCount: type.gpu?.count ?? 0,
            gpuName: type.gpu?.name ?? null,
            gpuMemory: type.gpu?.memoryGib ?? null,
            gpuVendor: type.gpu ? (type.gpu.vendor ?? 'nvidia') : null,
            spot,
            diskSize: type.diskGib ?? 100,
          }),
        );
      }
    }
  }
  return items;
}

/**
 * The offers of the fake cloud matching `requirements` in `regions` (all when
 * null), cheapest first, through the same catalog matching real backends use.
 */
export function fakeOffers(
  backendType: string,
  capacity: FakeCapacity,
  requirements: Requirements,
  regions: readonly string[] | null | undefined,
): InstanceOfferWithAvailability[] {
  const filter = requirementsToQueryFilter(requirements, { provider: backendType });
  const allowedRegions = regions == null ? null : new Set(regions);
  const unavailable = new Set(capacity.unavailableRegions ?? []);
  const offers: InstanceOfferWithAvailability[] = [];
  for (const item of fakeCatalog(backendType, capacity)) {
    if (allowedRegions && !allowedRegions.has(item.location)) continue;
    if (!matches(item, filter)) continue;
    const offer = catalogItemToOffer(item, backendType, { requirements });
    if (offer === null) continue;
    offers.push(withAvailability(offer, unavailable.has(item.location) ? 'not_available' : 'available'));
  }
  return offers.sort((left, right) => left.price - right.price);
}

function roundPrice(price: number): number {
  return Math.round(price * 10_000) / 10_000;
}
