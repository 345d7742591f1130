/**
 * Offers a backend asked for live, kept for a while per requirements (dstack's
 * `ComputeWithFilteredOffersCached`: 180 s, keyed by the requirements), so plans in a row ask a
 * marketplace once. Only answers are kept: a search that fails or is aborted is asked again
 * next time. An offer kept here may be gone when it is launched; launching moves on to the next.
 */
import type { InstanceOfferWithAvailability } from '../models/instances.js';
import type { Requirements } from '../models/requirements.js';

/** dstack's time to keep them. */
export const OFFERS_CACHE_TTL_MS = 180_000;
/** How many requirements' offers are kept (dstack's TTLCache maxsize); the oldest go first. */
export const OFFERS_CACHE_MAX_ENTRIES = 10;

export interface OffersCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** The clock, for tests. Default `Date.now`. */
  now?: () => number;
}

export class OffersCache {
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** By requirements as JSON, in insertion order (a Map keeps it), so the first is the oldest. */
  readonly #entries = new Map<string, { offers: InstanceOfferWithAvailability[]; expiresAt: number }>();

  constructor(options: OffersCacheOptions = {}) {
    this.#ttlMs = options.ttlMs ?? OFFERS_CACHE_TTL_MS;
    this.#maxEntries = options.maxEntries ?? OFFERS_CACHE_MAX_ENTRIES;
    this.#now = options.now ?? Date.now;
  }

  /** The offers kept for `requirements`, or those `load` answers (then kept). */
  async get(
    requirements: Requirements,
    load: () => Promise<InstanceOfferWithAvailability[]>,
  ): Promise<InstanceOfferWithAvailability[]> {
    const key = JSON.stringify(requirements);
    const kept = this.#entries.get(key);
    if (kept && kept.expiresAt > this.#now()) return kept.offers;
    const offers = await load();
    this.#entries.delete(key);
    this.#entries.set(key, { offers, expiresAt: this.#now() + this.#ttlMs });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
    return offers;
  }
}
