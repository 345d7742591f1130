import type { OfflineCatalogProvider } from '@dstack/catalog';
import { notImplemented } from '@dstack/core';
import { AZURE_BACKEND_TYPE } from './azure-config.js';

/**
 * Collects the azure offers ahead of time into the catalog file `azure.csv`
 * (an offline provider: prices and instance types change rarely).
 * `dstack-catalog collect azure --module @dstack/backend-azure --output azure.csv`
 * runs it.
 */
export class AzureCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = AZURE_BACKEND_TYPE;

  /**
   * Every offer from the provider's price and instance-type APIs: one
   * `CatalogItem` (`createCatalogItem` of @dstack/catalog) per instance type,
   * region and spot/on-demand price. Honour `options.applyFilter` (drop rows
   * not meant for publishing), `options.signal` and `options.onProgress`.
   */
  collect = notImplemented<OfflineCatalogProvider['collect']>(
    'AzureCatalogProvider.collect',
    "must fetch every azure instance type, region and price from the provider's APIs and return them as CatalogItems",
  );
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const azureCatalogProvider = new AzureCatalogProvider();
