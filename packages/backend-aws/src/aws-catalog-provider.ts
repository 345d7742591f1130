import type { OfflineCatalogProvider } from '@dstack/catalog';
import { notImplemented } from '@dstack/core';
import { AWS_BACKEND_TYPE } from './aws-config.js';

/**
 * Collects the aws offers ahead of time into the catalog file `aws.csv`
 * (an offline provider: prices and instance types change rarely).
 * `dstack-catalog collect aws --module @dstack/backend-aws --output aws.csv`
 * runs it.
 */
export class AwsCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = AWS_BACKEND_TYPE;

  /**
   * Every offer from the provider's price and instance-type APIs: one
   * `CatalogItem` (`createCatalogItem` of @dstack/catalog) per instance type,
   * region and spot/on-demand price. Honour `options.applyFilter` (drop rows
   * not meant for publishing), `options.signal` and `options.onProgress`.
   */
  collect = notImplemented<OfflineCatalogProvider['collect']>(
    'AwsCatalogProvider.collect',
    "must fetch every aws instance type, region and price from the provider's APIs and return them as CatalogItems",
  );
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const awsCatalogProvider = new AwsCatalogProvider();
