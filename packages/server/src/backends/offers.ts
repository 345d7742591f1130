/**
 * Offers for a job (dstack's `get_offers_by_requirements`): every eligible
 * backend is asked in parallel, answers are sorted by price across backends
 * (a backend's own order only breaks ties), then filtered by region and instance
 * type; offers that cannot be provisioned now go last.
 */
import {
  hasCapability,
  type InstanceOfferWithAvailability,
  isAvailable,
  type Range,
  type Requirements,
} from '@dstack/core';
import type { ProjectBackend } from './registry.js';

export interface OfferFilters {
  backends?: readonly string[] | null;
  regions?: readonly string[] | null;
  instanceTypes?: readonly string[] | null;
  /** Zones an offer must have one of (its `availability_zones` are narrowed to them); an offer that names none passes. */
  availabilityZones?: readonly string[] | null;
}

export interface BackendOffer {
  backend: ProjectBackend;
  offer: InstanceOfferWithAvailability;
}

export interface OffersResult {
  offers: BackendOffer[];
  /** Backends whose `getOffers` failed or missed the deadline, with the reason; their offers are missing. */
  failures: Array<{ backend: string; error: string }>;
}

export interface GetOffersOptions {
  /**
   * How long to wait for each backend's offers, in milliseconds. A backend that answers later is
   * left out (a failure; its call is aborted through `GetOffersOptions.signal` of the contract)
   * so a slow marketplace never holds a plan. Default: no deadline.
   */
  deadlineMs?: number;
}

/** The line a user sees for each backend whose offers are missing (plan, `dstack offer`). */
export function offerWarnings(failures: OffersResult['failures']): string[] {
  return failures.map((failure) => `Offers of backend ${failure.backend} are missing: ${failure.error}`);
}

/** A backend's offers, abandoned (and its call aborted) once `deadlineMs` passes. */
async function backendOffers(
  backend: ProjectBackend,
  requirements: Requirements,
  deadlineMs: number | undefined,
): Promise<InstanceOfferWithAvailability[]> {
  if (deadlineMs === undefined) return backend.compute.getOffers(requirements);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`the backend did not answer within ${deadlineMs / 1000} s`));
    }, deadlineMs);
  });
  const call = backend.compute.getOffers(requirements, { signal: controller.signal });
  // Abandoned at the deadline: its late failure must not surface as an unhandled rejection.
  call.catch(() => {});
  try {
    return await Promise.race([call, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The backends `filters` allow. A multi-node job (or a cluster fleet's instance) only goes to
 * backends whose instances reach each other (the `multinode` capability, dstack's
 * `BACKENDS_WITH_MULTINODE_SUPPORT`): a Vast.ai rental shares no network with the others. A job
 * with a `reservation` only goes to backends that honour one (the `reservations` capability,
 * dstack's `BACKENDS_WITH_RESERVATION_SUPPORT`): elsewhere it would run outside it.
 */
function eligibleBackends(
  backends: readonly ProjectBackend[],
  filters: OfferFilters,
  requirements: Requirements,
): ProjectBackend[] {
  const wanted = filters.backends;
  const named = wanted && wanted.length > 0 ? backends.filter((b) => wanted.includes(b.type)) : [...backends];
  return named.filter(
    (b) =>
      (!requirements.multinode || hasCapability(b.compute, 'multinode')) &&
      (!requirements.reservation || hasCapability(b.compute, 'reservations')),
  );
}

/**
 * All backends' offers sorted by price. gpuhunt's `heapq.merge` (and a k-way merge like it) assumes
 * each list is already sorted, and a marketplace's list is not (Vast.ai answers in score order), so
 * one cheap offer deep in such a list would come after every dearer offer of the other backends.
 * The sort is stable: a backend's own order (and the backends' order) only breaks ties.
 */
function sortByPrice(lists: BackendOffer[][]): BackendOffer[] {
  return lists.flat().sort((a, b) => a.offer.price - b.offer.price);
}

function passesFilters(offer: InstanceOfferWithAvailability, filters: OfferFilters): boolean {
  if (filters.regions?.length && !filters.regions.includes(offer.region)) return false;
  if (filters.instanceTypes?.length && !filters.instanceTypes.includes(offer.instance.name)) return false;
  const zones = filters.availabilityZones;
  if (
    zones?.length &&
    offer.availability_zones &&
    !offer.availability_zones.some((zone) => zones.includes(zone))
  )
    return false;
  return true;
}

/** The offer with only the zones the filters allow, so that a launch tries no other. */
function inFilteredZones(
  offer: InstanceOfferWithAvailability,
  filters: OfferFilters,
): InstanceOfferWithAvailability {
  const zones = filters.availabilityZones;
  if (!zones?.length || !offer.availability_zones) return offer;
  return { ...offer, availability_zones: offer.availability_zones.filter((zone) => zones.includes(zone)) };
}

export async function getOffers(
  backends: readonly ProjectBackend[],
  requirements: Requirements,
  filters: OfferFilters = {},
  options: GetOffersOptions = {},
): Promise<OffersResult> {
  const failures: OffersResult['failures'] = [];
  const lists = await Promise.all(
    eligibleBackends(backends, filters, requirements).map(async (backend) => {
      try {
        const offers = await backendOffers(backend, requirements, options.deadlineMs);
        return offers
          .filter((offer) => passesFilters(offer, filters))
          .map((offer) => ({ backend, offer: inFilteredZones(offer, filters) }));
      } catch (error) {
        failures.push({
          backend: backend.type,
          error: error instanceof Error ? error.message : String(error),
        });
        return [];
      }
    }),
  );
  const merged = sortByPrice(lists);
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

/** One requirement the user stated, and the offers query that keeps only that one. */
interface RequirementDimension {
  label: string;
  requirements: Requirements;
  filters: OfferFilters;
}

/** `open` is `requirements` with every resource, spot and price requirement dropped. */
function dimensions(
  requirements: Requirements,
  filters: OfferFilters,
  open: Requirements,
): RequirementDimension[] {
  const resources = requirements.resources;
  const unfiltered: OfferFilters = { backends: filters.backends };
  const withResources = (extra: Partial<Requirements['resources']>): Requirements => ({
    ...open,
    resources: { ...open.resources, ...extra },
  });
  const result: RequirementDimension[] = [];
  const add = (label: string, only: Requirements, onlyFilters = unfiltered) =>
    result.push({ label, requirements: only, filters: onlyFilters });
  const gpu = resources.gpu;
  if (gpu && ((gpu.count.min ?? 0) > 0 || gpu.name?.length || gpu.memory || gpu.vendor)) {
    const parts = [`count ${formatRange(gpu.count)}`];
    if (gpu.name?.length) parts.push(`name ${gpu.name.join('|')}`);
    if (gpu.memory) parts.push(`memory ${formatRange(gpu.memory, 'GB')}`);
    if (gpu.vendor) parts.push(`vendor ${gpu.vendor}`);
    add(`gpu ${parts.join(', ')}`, withResources({ gpu }));
  }
  add(`cpu ${formatRange(resources.cpu.count)}`, withResources({ cpu: resources.cpu }));
  add(`memory ${formatRange(resources.memory, 'GB')}`, withResources({ memory: resources.memory }));
  if (resources.disk)
    add(`disk ${formatRange(resources.disk.size, 'GB')}`, withResources({ disk: resources.disk }));
  if (requirements.spot != null) {
    add(requirements.spot ? 'spot instances only' : 'on-demand instances only', {
      ...open,
      spot: requirements.spot,
    });
  }
  if (requirements.max_price != null) {
    add(`max_price $${requirements.max_price}/h`, { ...open, max_price: requirements.max_price });
  }
  if (filters.regions?.length) add(`regions ${filters.regions.join(', ')}`, open, filters);
  return result;
}

/**
 * The label of the `reservation` requirement: the reservation and, from each backend that honours
 * reservations and can tell, why it gives no offers (not found, not active, full).
 */
async function reservationLabel(
  backends: readonly ProjectBackend[],
  filters: OfferFilters,
  reservation: string,
): Promise<string> {
  const reasons = await Promise.all(
    backends
      .filter((b) => !filters.backends?.length || filters.backends.includes(b.type))
      .map(async (backend) => {
        const { compute } = backend;
        if (!hasCapability(compute, 'reservations') || !compute.reservationUnusableReason) return null;
        try {
          const reason = await compute.reservationUnusableReason(reservation);
          return reason === null ? null : `${backend.type}: ${reason}`;
        } catch (error) {
          return `${backend.type}: the reservation could not be looked up (${error instanceof Error ? error.message : String(error)})`;
        }
      }),
  );
  const known = reasons.filter((reason): reason is string => reason !== null);
  return known.length > 0 ? `reservation ${reservation} (${known.join('; ')})` : `reservation ${reservation}`;
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
  options: GetOffersOptions = {},
): Promise<Array<{ requirement: string; excluded: number }>> {
  const open: Requirements = {
    ...requirements,
    resources: OPEN_RESOURCES,
    spot: null,
    max_price: null,
    reservation: null,
  };
  const all = (await getOffers(backends, open, { backends: filters.backends }, options)).offers.length;
  if (all === 0) {
    const names = backends.map((b) => b.type).join(', ') || 'none';
    if (
      requirements.multinode &&
      backends.length > 0 &&
      eligibleBackends(backends, filters, requirements).length === 0
    ) {
      return [
        {
          requirement: `a cluster needs a backend whose instances reach each other (multinode); the configured backends (${names}) have none`,
          excluded: 0,
        },
      ];
    }
    return [{ requirement: `the configured backends (${names}) have no offers at all`, excluded: 0 }];
  }
  const stated = dimensions(requirements, filters, open);
  if (requirements.reservation) {
    stated.push({
      label: await reservationLabel(backends, filters, requirements.reservation),
      requirements: { ...open, reservation: requirements.reservation },
      filters: { backends: filters.backends },
    });
  }
  const explained = await Promise.all(
    stated.map(async (dimension) => {
      const kept = (await getOffers(backends, dimension.requirements, dimension.filters, options)).offers
        .length;
      return { requirement: dimension.label, excluded: all - kept };
    }),
  );
  return explained.filter((entry) => entry.excluded > 0);
}
