import type { CatalogItem, QueryFilter } from '../catalog-item.js';

/** Options for {@link OfflineCatalogProvider.collect}. */
export interface CollectOptions {
  /**
   * Keep only the rows meant for publishing (gpuhunt's `OfflineProvider.filter()`).
   * Default: true; `dstack-catalog collect --no-filter` passes false.
   */
  applyFilter?: boolean;
  /** Cancels the collection. */
  signal?: AbortSignal;
  /** Progress messages for a human (one line each). */
  onProgress?: (message: string) => void;
}

/**
 * A provider whose offers are collected ahead of time into a catalog file
 * (`{provider}.csv`), published, and read by {@link Catalog} from a catalog source.
 * What a backend package provides for `dstack-catalog collect`.
 */
export interface OfflineCatalogProvider {
  readonly kind: 'offline';
  /** Lowercase provider name, also the catalog file name (`aws` → `aws.csv`). */
  readonly name: string;
  /** Fetches the current offers from the cloud's price and capacity APIs. */
  collect(options?: CollectOptions): Promise<CatalogItem[]>;
}

/**
 * A provider queried live on each catalog query (marketplaces whose offers change by the
 * minute, like Vast.ai).
 */
export interface OnlineCatalogProvider {
  readonly kind: 'online';
  /** Lowercase provider name. */
  readonly name: string;
  /**
   * Offers for a query, in the provider's order of preference (usually price ascending).
   * The filter is a hint to cut API calls and may be ignored: the catalog applies
   * `matches()` to every returned offer.
   */
  query(filter: QueryFilter): Promise<CatalogItem[]>;
}

export type CatalogProvider = OfflineCatalogProvider | OnlineCatalogProvider;
