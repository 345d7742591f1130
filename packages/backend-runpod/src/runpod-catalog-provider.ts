import type { OfflineCatalogProvider } from '@dstack/catalog';
import { notImplemented } from '@dstack/core';
import { RUNPOD_BACKEND_TYPE } from './runpod-config.js';

/**
 * Collects the runpod offers ahead of time into the catalog file `runpod.csv`
 * (an offline provider: prices and instance types change rarely).
 * `dstack-catalog collect runpod --module @dstack/backend-runpod --output runpod.csv`
 * runs it.
 */
export class RunpodCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = RUNPOD_BACKEND_TYPE;

  /**
   * Every offer from the provider's price and instance-type APIs: one
   * `CatalogItem` (`createCatalogItem` of @dstack/catalog) per instance type,
   * region and spot/on-demand price. Honour `options.applyFilter` (drop rows
   * not meant for publishing), `options.signal` and `options.onProgress`.
   */
  collect = notImplemented<OfflineCatalogProvider['collect']>(
    'RunpodCatalogProvider.collect',
    "must fetch every runpod instance type, region and price from the provider's APIs and return them as CatalogItems",
  );
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const runpodCatalogProvider = new RunpodCatalogProvider();
