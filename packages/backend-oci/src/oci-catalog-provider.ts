import type { OfflineCatalogProvider } from '@dstack/catalog';
import { notImplemented } from '@dstack/core';
import { OCI_BACKEND_TYPE } from './oci-config.js';

/**
 * Collects the oci offers ahead of time into the catalog file `oci.csv`
 * (an offline provider: prices and instance types change rarely).
 * `dstack-catalog collect oci --module @dstack/backend-oci --output oci.csv`
 * runs it.
 */
export class OciCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = OCI_BACKEND_TYPE;

  /**
   * Every offer from the provider's price and instance-type APIs: one
   * `CatalogItem` (`createCatalogItem` of @dstack/catalog) per instance type,
   * region and spot/on-demand price. Honour `options.applyFilter` (drop rows
   * not meant for publishing), `options.signal` and `options.onProgress`.
   */
  collect = notImplemented<OfflineCatalogProvider['collect']>(
    'OciCatalogProvider.collect',
    "must fetch every oci instance type, region and price from the provider's APIs and return them as CatalogItems",
  );
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const ociCatalogProvider = new OciCatalogProvider();
