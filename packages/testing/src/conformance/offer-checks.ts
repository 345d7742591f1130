import {
  type InstanceOfferWithAvailability,
  InstanceOfferWithAvailabilitySchema,
  isAvailable,
  type Requirements,
} from '@dstack/core';
import { ConformanceViolation, show } from './conformance-violation.js';

const describeOffer = (offer: InstanceOfferWithAvailability, index: number) =>
  `offer #${index} (${offer.instance?.name ?? '?'} in ${offer.region ?? '?'}, ${offer.price ?? '?'} $/h)`;

/** Every offer parses as `InstanceOfferWithAvailability` and belongs to `backendType`. */
export function checkOffersWellFormed(offers: unknown, backendType: string): void {
  const rule = 'getOffers returns well-formed offers of this backend';
  if (!Array.isArray(offers)) throw new ConformanceViolation(rule, `expected an array, got ${show(offers)}`);
  offers.forEach((offer, index) => {
    const parsed = InstanceOfferWithAvailabilitySchema.safeParse(offer);
    if (!parsed.success) {
      const issues = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
      );
      throw new ConformanceViolation(
        rule,
        `offer #${index} is invalid (${issues.join('; ')}): ${show(offer)}`,
      );
    }
    if (parsed.data.backend !== backendType) {
      throw new ConformanceViolation(
        rule,
        `${describeOffer(parsed.data, index)} has backend "${parsed.data.backend}", expected "${backendType}"`,
      );
    }
  });
}

/** Prices never decrease along the list. */
export function checkOffersOrderedByPrice(offers: readonly InstanceOfferWithAvailability[]): void {
  for (let index = 1; index < offers.length; index++) {
    const previous = offers[index - 1];
    const current = offers[index];
    if (previous && current && current.price < previous.price) {
      throw new ConformanceViolation(
        'offers are ordered by price, cheapest first',
        `${describeOffer(current, index)} is cheaper than ${describeOffer(previous, index - 1)}`,
      );
    }
  }
}

const MIB_PER_GB = 1024;

/** Why `offer` breaks `requirements` (cpu, memory, max price, spot, GPU count), or null when it satisfies them. */
export function offerMismatch(
  offer: InstanceOfferWithAvailability,
  requirements: Requirements,
): string | null {
  const { resources } = offer.instance;
  const cpu = requirements.resources.cpu.count;
  if (cpu.min != null && resources.cpus < cpu.min) return `${resources.cpus} CPUs < min ${cpu.min}`;
  if (cpu.max != null && resources.cpus > cpu.max) return `${resources.cpus} CPUs > max ${cpu.max}`;
  const memory = requirements.resources.memory;
  const memoryGb = resources.memory_mib / MIB_PER_GB;
  if (memory.min != null && memoryGb < memory.min) return `${memoryGb} GB of memory < min ${memory.min}`;
  if (memory.max != null && memoryGb > memory.max) return `${memoryGb} GB of memory > max ${memory.max}`;
  if (requirements.max_price != null && offer.price > requirements.max_price) {
    return `price ${offer.price} > max_price ${requirements.max_price}`;
  }
  if (requirements.spot != null && resources.spot !== requirements.spot) {
    return `spot is ${resources.spot}, required ${requirements.spot}`;
  }
  const gpuCount = requirements.resources.gpu?.count;
  if (gpuCount?.min != null && resources.gpus.length < gpuCount.min) {
    return `${resources.gpus.length} GPUs < min ${gpuCount.min}`;
  }
  if (gpuCount?.max != null && resources.gpus.length > gpuCount.max) {
    return `${resources.gpus.length} GPUs > max ${gpuCount.max}`;
  }
  return null;
}

/** Every offer satisfies `requirements`; `what` names the filter in the message. */
export function checkOffersSatisfy(
  offers: readonly InstanceOfferWithAvailability[],
  requirements: Requirements,
  what: string,
): void {
  offers.forEach((offer, index) => {
    const mismatch = offerMismatch(offer, requirements);
    if (mismatch !== null) {
      throw new ConformanceViolation(
        `getOffers honours ${what}`,
        `${describeOffer(offer, index)} does not satisfy it: ${mismatch}`,
      );
    }
  });
}

/** A filter derived from the unfiltered offers, with whether some offer must still match it. */
export interface DerivedFilter {
  /** `cpu.count.min = 4`, … */
  readonly what: string;
  readonly requirements: Requirements;
  /**
   * True when an unfiltered offer satisfies the filter, so an empty answer
   * would mean the backend drops offers it should keep.
   */
  readonly expectsOffers: boolean;
}

type FilterKind = 'cpu' | 'memory' | 'max_price' | 'spot' | 'gpu';

/**
 * Filters that split the unfiltered offers (the median value of each
 * dimension), so that honouring them means something: each keeps some offers
 * and, when the offers differ, drops others.
 */
export function deriveFilters(
  offers: readonly InstanceOfferWithAvailability[],
  base: Requirements,
  kind: FilterKind,
): DerivedFilter[] {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const resources = base.resources;
  const filters: DerivedFilter[] = [];
  const push = (what: string, requirements: Requirements) => {
    const expectsOffers = offers.some((offer) => offerMismatch(offer, requirements) === null);
    filters.push({ what, requirements, expectsOffers });
  };
  if (kind === 'cpu') {
    const cpus = median(offers.map((offer) => offer.instance.resources.cpus)) ?? 2;
    const min = Math.max(cpus, resources.cpu.count.min ?? 0);
    push(`cpu.count.min = ${min}`, {
      ...base,
      resources: { ...resources, cpu: { ...resources.cpu, count: { ...resources.cpu.count, min } } },
    });
  }
  if (kind === 'memory') {
    const memoryGb = median(offers.map((offer) => offer.instance.resources.memory_mib / MIB_PER_GB)) ?? 1;
    const min = Math.max(Math.floor(memoryGb * 100) / 100, resources.memory.min ?? 0);
    push(`memory.min = ${min} GB`, {
      ...base,
      resources: { ...resources, memory: { ...resources.memory, min } },
    });
  }
  if (kind === 'max_price') {
    const price = median(offers.map((offer) => offer.price)) ?? 1;
    // `max_price` must be positive; free offers (local) still pass a tiny one.
    const maxPrice = Math.max(price, 0.0001);
    push(`max_price = ${maxPrice}`, { ...base, max_price: maxPrice });
  }
  if (kind === 'spot') {
    push('spot = true', { ...base, spot: true });
    push('spot = false', { ...base, spot: false });
  }
  if (kind === 'gpu') {
    const counts = offers.map((offer) => offer.instance.resources.gpus.length).filter((count) => count > 0);
    const min = median(counts) ?? 1;
    push(`gpu.count.min = ${min}`, {
      ...base,
      resources: { ...resources, gpu: { ...(resources.gpu ?? {}), count: { min, max: null } } },
    });
    push('gpu.count.max = 0', {
      ...base,
      resources: { ...resources, gpu: { ...(resources.gpu ?? {}), count: { min: 0, max: 0 } } },
    });
  }
  return filters;
}

/** The cheapest offer that can be provisioned now (availability unknown, available or idle). */
export function cheapestProvisionableOffer(
  offers: readonly InstanceOfferWithAvailability[],
): InstanceOfferWithAvailability | undefined {
  return provisionableOffersByPrice(offers)[0];
}

/** The offers a launch may be tried on, cheapest first. */
export function provisionableOffersByPrice(
  offers: readonly InstanceOfferWithAvailability[],
): InstanceOfferWithAvailability[] {
  return offers
    .filter((offer) => isAvailable(offer.availability))
    .sort((left, right) => left.price - right.price);
}
