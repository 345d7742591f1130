import type { CatalogItem, OnlineCatalogProvider, QueryFilter } from '@dstack/catalog';
import type { Dispatcher } from 'undici';
import { VastAiApi } from './vastai-api.js';
import { VAST_AI_BACKEND_TYPE, VAST_AI_DEFAULT_ENDPOINT_URL } from './vastai-config.js';
import { fromVastAiGpuName } from './vastai-gpu-names.js';
import {
  buildSearchBody,
  offerToCatalogItems,
  satisfiesSearchBody,
  type VastAiSearchOptions,
} from './vastai-offers.js';

/** Settings of {@link VastAiCatalogProvider}. */
export interface VastAiCatalogProviderSettings extends VastAiSearchOptions {
  /** The API root. Default: env `DSTACK_VASTAI_ENDPOINT_URL`, else `https://console.vast.ai`. */
  endpointUrl?: string;
  /** The undici dispatcher requests go through. Default undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-request limit in milliseconds. Default 10 000 (gpuhunt's). */
  timeoutMs?: number;
}

/** Options of one query beyond the catalog's filter. */
export interface VastAiQueryOptions {
  /** Aborts the search (a plan's deadline). */
  signal?: AbortSignal;
}

/**
 * The Vast.ai offers, asked live on each catalog query (gpuhunt's `VastAIProvider`, online, no
 * creds: the search is public). Add it to a `Catalog` with `catalog.addProvider(provider)`.
 * Errors propagate: the `Catalog` reports and skips a failing online provider, and the backend
 * turns them into a plan warning.
 */
export class VastAiCatalogProvider implements OnlineCatalogProvider {
  readonly kind = 'online';
  readonly name = VAST_AI_BACKEND_TYPE;
  readonly #api: VastAiApi;
  readonly #search: VastAiSearchOptions;

  constructor(settings: VastAiCatalogProviderSettings = {}) {
    this.#api = new VastAiApi({
      endpointUrl:
        settings.endpointUrl ?? process.env.DSTACK_VASTAI_ENDPOINT_URL ?? VAST_AI_DEFAULT_ENDPOINT_URL,
      dispatcher: settings.dispatcher,
      timeoutMs: settings.timeoutMs,
    });
    this.#search = { communityCloud: settings.communityCloud, extraFilters: settings.extraFilters };
  }

  /**
   * The asks matching the filter as catalog rows, in Vast's score order (each ask's on-demand and
   * spot rows by price). Asks that break the filter (Vast's search is loose) are dropped here.
   */
  async query(filter: QueryFilter, options: VastAiQueryOptions = {}): Promise<CatalogItem[]> {
    const body = buildSearchBody(filter, this.#search);
    const offers = await this.#api.searchOffers(body, options.signal);
    // With no GPU name mapped the search asked for every GPU: keep the wanted ones here.
    const unmappedNames =
      body.limit === undefined ? undefined : new Set(filter.gpuName?.map((name) => name.toLowerCase()));
    return offers.flatMap((offer) => {
      if (!satisfiesSearchBody(offer, body)) return [];
      if (unmappedNames && !unmappedNames.has(fromVastAiGpuName(offer.gpu_name).toLowerCase())) return [];
      return offerToCatalogItems(offer, filter);
    });
  }
}

/** The provider the plugin descriptor carries (`catalogProvider`): community cloud, dstack's quality bar off. */
export const vastAiCatalogProvider = new VastAiCatalogProvider();
