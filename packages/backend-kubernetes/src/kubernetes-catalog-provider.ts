import type { OnlineCatalogProvider } from '@dstack/catalog';
import { notImplemented } from '@dstack/core';
import { KUBERNETES_BACKEND_TYPE } from './kubernetes-config.js';

/**
 * The kubernetes offers, asked live on each catalog query (an online provider,
 * for offers that change by the minute, like a marketplace's). Add it to a
 * `Catalog` with `catalog.addProvider(kubernetesCatalogProvider)`.
 */
export class KubernetesCatalogProvider implements OnlineCatalogProvider {
  readonly kind = 'online';
  readonly name = KUBERNETES_BACKEND_TYPE;

  /**
   * The offers for a query, cheapest first: one `CatalogItem` (`createCatalogItem`
   * of @dstack/catalog) per offer. The filter is a hint to cut API calls; the
   * catalog applies `matches()` to every row returned.
   */
  query = notImplemented<OnlineCatalogProvider['query']>(
    'KubernetesCatalogProvider.query',
    'must ask the kubernetes API for its current offers and return them as CatalogItems, cheapest first',
  );
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const kubernetesCatalogProvider = new KubernetesCatalogProvider();
