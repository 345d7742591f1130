/**
 * The marketplace's asks: what a search can find and a rental takes. Renting an ask takes it out
 * of the book (the next rental of it is `no_such_ask`, searches no longer list it); destroying the
 * rental puts it back, as the host's machine becomes rentable again. An ask can also vanish on
 * its own (another customer rented it between a search and a rental).
 */
import {
  DEFAULT_VASTAI_EMULATOR_ASKS,
  type VastaiAskSpec,
  type VastaiOffer,
  vastaiOffer,
} from './vastai-emulator-data.js';
import { parseVastaiSearchQuery, searchOffers } from './vastai-search-query.js';

export class VastaiOfferBook {
  readonly #available = new Map<number, VastaiOffer>();
  /** Every ask the book ever held, rented or vanished ones too: a destroyed rental's ask comes back. */
  readonly #known = new Map<number, VastaiOffer>();
  readonly #fields: ReadonlySet<string>;

  constructor(asks: readonly VastaiAskSpec[] = DEFAULT_VASTAI_EMULATOR_ASKS) {
    for (const spec of asks) this.add(spec);
    const sample = vastaiOffer(DEFAULT_VASTAI_EMULATOR_ASKS[0] as VastaiAskSpec);
    this.#fields = new Set(Object.keys(sample));
  }

  /** Lists a new ask (or lists an ask again); the error names a duplicate id. */
  add(spec: VastaiAskSpec): VastaiOffer {
    if (!Number.isInteger(spec.id) || spec.id <= 0) {
      throw new Error(`ask id: expected a positive integer, got ${JSON.stringify(spec.id)}`);
    }
    if (this.#available.has(spec.id)) throw new Error(`ask id: ${spec.id} is already in the offer book`);
    const offer = vastaiOffer(spec);
    this.#available.set(offer.id, offer);
    this.#known.set(offer.id, offer);
    return offer;
  }

  /** The asks a search body selects; throws `VastaiQueryError` for a query Vast.ai refuses. */
  search(body: unknown): VastaiOffer[] {
    return searchOffers([...this.#available.values()], parseVastaiSearchQuery(body, this.#fields));
  }

  /** The ask if it can be rented now. */
  find(askId: number): VastaiOffer | undefined {
    return this.#available.get(askId);
  }

  /** Takes the ask out of the book for a rental; undefined when it is gone. */
  take(askId: number): VastaiOffer | undefined {
    const offer = this.#available.get(askId);
    if (offer) this.#available.delete(askId);
    return offer;
  }

  /** The ask disappears (someone else rented it); false when it was not in the book. */
  vanish(askId: number): boolean {
    return this.#available.delete(askId);
  }

  /** Lists a rented ask again once its rental is destroyed. */
  release(askId: number): void {
    const offer = this.#known.get(askId);
    if (offer && !this.#available.has(askId)) this.#available.set(askId, offer);
  }

  /** The asks that can be rented now, in the book's order. */
  available(): readonly VastaiOffer[] {
    return [...this.#available.values()];
  }
}
