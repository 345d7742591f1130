/**
 * Offers for a job (dstack's `get_offers_by_requirements`): every eligible
 * backend is asked in parallel, answers are merged by price keeping each
 * backend's own order, then filtered by region and instance type; offers that
 * cannot be provisioned now go last.
 */
import { type InstanceOfferWithAvailability, isAvailable, type Range, type Requirements } from '@dstack/core';
import type { ProjectBackend } from '../run-services.js';

export interface OfferFilters {
  backends?: readonly string[] | null;
  regions?: readonly string[] | null;
  instanceTypes?: readonly string[] | null;
}

export interface BackendOffer {
  backend: ProjectBackend;
  offer: InstanceOfferWithAvailability;
}

export interface OffersResult {
  offers: BackendOffer[];
  /** Backends whose `getOffers` failed, with the reason; their offers are missing. */
  failures: Array<{ backend: string; error: string }>;
}

function eligibleBackends(backends: readonly ProjectBackend[], filters: OfferFilters): ProjectBackend[] {
  const wanted = filters.backends;
  return wanted && wanted.length > 0 ? backends.filter((b) => wanted.includes(b.type)) : [...backends];
}

/** k-way merge by price, stable within each list (heapq.merge). */
function mergeByPrice(lists: BackendOffer[][]): BackendOffer[] {
  const positions = lists.map(() => 0);
  const merged: BackendOffer[] = [];
  for (;;) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      const candidate = lists[i]?.[positions[i] ?? 0];
      if (!candidate) continue;
      const current = best >= 0 ? lists[best]?.[positions[best] ?? 0] : undefined;
      if (!current || candidate.offer.price < current.offer.price) best = i;
    }
    if (best < 0) return merged;
    merged.push(lists[best]?.[positions[best] ?? 0] as BackendOffer);
    positions[best] = (positions[best] ?? 0) + 1;
  }
}

function passesFilters(offer: InstanceOfferWithAvailability, filters: OfferFilters): boolean {
  if (filters.regions?.length && !filters.regions.includes(offer.region)) return false;
  if (filters.instanceTypes?.length && !filters.instanceTypes.includes(offer.instance.name)) return false;
  return true;
}

export async function getOffers(
  backends: readonly ProjectBackend[],
  requirements: Requirements,
  filters: OfferFilters = {},
): Promise<OffersResult> {
  const failures: OffersResult['failures'] = [];
  const lists = await Promise.all(
    eligibleBackends(backends, filters).map(async (backend) => {
      try {
        const offers = await backend.compute.getOffers(requirements);
        return offers.filter((offer) => passesFilters(offer, filters)).map((offer) => ({ backend, offer }));
      } catch (error) {
        failures.push({
          backend: backend.type,
          error: error instanceof Error ? error.message : String(error),
        });
        return [];
      }
    }),
  );
  const merged = mergeByPrice(lists);
  const available = merged.filter((entry) => isAvailable(entry.offer.availability));
  const unavailable = merged.filter((entry) => !isAvailable(entry.offer.availability));
  return { offers: [...available, ...unavailable], failures };
}

function formatRange(range: Range | null | undefined, unit = ''): string {
  const min = range?.min ?? null;
  const max = range?.max ?? null;
  if (min !== null && min === max) return `${min}${unit}`;
  return `${min ?? ''}${min !== null ? unit : ''}..${max ?? ''}${max !== null ? unit : ''}`;
}

/** One requirement the user stated, and `requirements` with only that one kept. */
interface RequirementDimension {
  label: string;
  only(open: Requirements, full: Requirements): Requirements;
}

function dimensions(requirements: Requirements, filters: OfferFilters): RequirementDimension[] {
  const resources = requirements.resources;
  const result: RequirementDimension[] = [];
  const gpu = resources.gpu;
  if (gpu && ((gpu.count.min ?? 0) > 0 || gpu.name?.length || gpu.memory || gpu.vendor)) {
    const parts = [`count ${formatRange(gpu.count)}`];
    if (gpu.name?.length) parts.push(`name ${gpu.name.join('|')}`);
    if (gpu.memory) parts.push(`memory ${formatRange(gpu.memory, 'GB')}`);
    if (gpu.vendor) parts.push(`vendor ${gpu.vendor}`);
    result.push({
      label: `gpu ${parts.join(', ')}`,
      only: (open) => ({ ...open, resources: { ...open.resources, gpu } }),
    });
  }
  result.push({
    label: `cpu ${formatRange(resources.cpu.count)}`,
    only: (open) => ({ ...open, resources: { ...open.resources, cpu: resources.cpu } }),
  });
  result.push({
    label: `memory ${formatRange(resources.memory, 'GB')}`,
    only: (open) => ({ ...open, resources: { ...open.resources, memory: resources.memory } }),
  });
  if (resources.disk) {
    const disk = resources.disk;
    result.push({
      label: `disk ${formatRange(disk.size, 'GB')}`,
      only: (open) => ({ ...open, resources: { ...open.resources, disk } }),
    });
  }
  if (requirements.spot !== null && requirements.spot !== undefined) {
    const spot = requirements.spot;
    result.push({
      label: spot ? 'spot instances only' : 'on-demand instances only',
      only: (open) => ({ ...open, spot }),
    });
  }
  if (requirements.max_price != null) {
    const maxPrice = requirements.max_price;
    result.push({ label: `max_price $${maxPrice}/h`, only: (open) => ({ ...open, max_price: maxPrice }) });
  }
  if (filters.regions?.length)
    result.push({ label: `regions ${filters.regions.join(', ')}`, only: (open) => open });
  return result;
}

const OPEN_RESOURCES: Requirements['resources'] = {
  cpu: { count: { min: null, max: null } },
  memory: { min: null, max: null },
  gpu: null,
  disk: null,
};

/**
 * Why nothing matched: for each requirement the user stated, how many of the
 * offers that exist without any requirement it excludes on its own. Used for
 * the "no offers" message; costs one offers query per requirement.
 */
export async function explainNoOffers(
  backends: readonly ProjectBackend[],
  requirements: Requirements,
  filters: OfferFilters = {},
): Promise<Array<{ requirement: string; excluded: number }>> {
  const open: Requirements = { ...requirements, resources: OPEN_RESOURCES, spot: null, max_price: null };
  const unfiltered = { backends: filters.backends };
  const all = (await getOffers(backends, open, unfiltered)).offers.length;
  const explained = await Promise.all(
    dimensions(requirements, filters).map(async (dimension) => {
      const dimensionFilters = dimension.label.startsWith('regions') ? filters : unfiltered;
      const kept = (await getOffers(backends, dimension.only(open, requirements), dimensionFilters)).offers
        .length;
      return { requirement: dimension.label, excluded: all - kept };
    }),
  );
  if (all === 0) {
    const names = backends.map((b) => b.type).join(', ') || 'none';
    return [{ requirement: `the configured backends (${names}) have no offers at all`, excluded: 0 }];
  }
  return explained.filter((entry) => entry.excluded > 0);
}
