import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  filterAwsOffers,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import {
  type AwsOnDemandRow,
  DEFAULT_AWS_PRICE_LIST_BASE_URL,
  downloadBulkPriceList,
  readOnDemandRows,
} from './aws-bulk-price-list.js';
import {
  type AwsGpuDetails,
  type Ec2CatalogClientSettings,
  fetchGpuDetails,
  fetchSpotPrices,
  isEc2ApiRegion,
} from './aws-catalog-ec2.js';
import { AWS_BACKEND_TYPE } from './aws-config.js';

/** Environment variable: the base URL of the bulk price list (an emulator), instead of AWS's. */
export const AWS_PRICE_LIST_URL_ENV = 'DSTACK_AWS_PRICE_LIST_URL';
/** Environment variable (gpuhunt's): where the price list is kept; an existing file is read, not downloaded. */
export const AWS_CACHE_PATH_ENV = 'AWS_CACHE_PATH';

export interface AwsCatalogProviderOptions {
  /**
   * Base URL of EC2's bulk price list. Default: `$DSTACK_AWS_PRICE_LIST_URL`, else
   * `https://pricing.us-east-1.amazonaws.com` (gpuhunt's).
   */
  priceListUrl?: string;
  /**
   * The price list file: read when it exists, else downloaded there and kept. Default:
   * `$AWS_CACHE_PATH`, else a temporary file removed after the collection.
   */
  cachePath?: string;
  /**
   * EC2 endpoint. Default: the SDK's own settings (`AWS_ENDPOINT_URL_EC2`, `AWS_ENDPOINT_URL`,
   * shared config), else AWS.
   */
  endpoint?: string;
  /** Default: the SDK's default credential chain (`AWS_ACCESS_KEY_ID`…, profiles, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

async function fileExists(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isFile(),
    () => false,
  );
}

/** Type names per EC2 API region, in first-seen order; Local Zone codes have no EC2 endpoint. */
function typesByRegion(rows: readonly { instanceName: string; location: string }[]): Map<string, string[]> {
  const byRegion = new Map<string, Set<string>>();
  for (const row of rows) {
    if (!isEc2ApiRegion(row.location)) continue;
    const types = byRegion.get(row.location) ?? new Set<string>();
    types.add(row.instanceName);
    byRegion.set(row.location, types);
  }
  return new Map([...byRegion].map(([region, types]) => [region, [...types]]));
}

/**
 * Collects the aws offers ahead of time into the catalog file `aws.csv` (an offline provider:
 * prices and instance types change rarely), the way gpuhunt's `AWSProvider` does:
 *
 * 1. the bulk price list: Linux, shared, used-capacity, hourly USD on-demand rows (retired
 *    families and fractional GPUs dropped), one on-demand offer per type and `Region Code`;
 * 2. DescribeInstanceTypes: GPU name and per-GPU memory (a GPU type EC2 does not describe is
 *    published without GPUs);
 * 3. with `applyFilter` (default), gpuhunt's `filter()`: the published families only;
 * 4. DescribeSpotPriceHistory: per region, the cheapest zone's current price becomes a spot
 *    copy of the offer;
 * 5. every offer sorted by price (ties keep their order).
 *
 * `dstack-catalog collect aws --output aws.csv` runs it.
 */
export class AwsCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = AWS_BACKEND_TYPE;
  readonly #options: AwsCatalogProviderOptions;

  constructor(options: AwsCatalogProviderOptions = {}) {
    this.#options = options;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const { signal, onProgress } = options;
    const rows = await this.#readPriceList(options);
    onProgress?.(`aws: ${rows.length} on-demand Linux offers in the price list`);
    const ec2: Ec2CatalogClientSettings = {
      endpoint: this.#options.endpoint,
      credentials: this.#options.credentials,
      onProgress,
      signal,
    };

    const gpuTypes = typesByRegion(rows.filter((row) => row.gpuCount > 0));
    const gpus = await fetchGpuDetails(gpuTypes, ec2);
    const undescribed = new Set(
      rows.filter((row) => row.gpuCount > 0 && !gpus.has(row.instanceName)).map((row) => row.instanceName),
    );
    for (const type of undescribed) {
      onProgress?.(`aws: warning: no GPU details for ${type}; its offers are published without GPUs`);
    }
    let offers = rows.map((row) => onDemandOffer(row, gpus));

    if (options.applyFilter ?? true) {
      // Spot prices are asked per type: dropping what will not be published first saves most calls.
      const kept = filterAwsOffers(offers);
      onProgress?.(`aws: filtered out ${offers.length - kept.length} of ${offers.length} offers`);
      offers = kept;
    }

    const spotPrices = await fetchSpotPrices(typesByRegion(offers), ec2);
    const spotOffers = offers.flatMap((offer) => {
      const price = spotPrices.get(offer.location)?.get(offer.instanceName);
      return price === undefined ? [] : [{ ...offer, spot: true, price, flags: [...offer.flags] }];
    });
    // Array.prototype.sort is stable, like Python's sorted(): equal prices keep their order.
    return [...offers, ...spotOffers].sort((a, b) => a.price - b.price);
  }

  /** The kept rows of the price list, downloaded unless the cache file exists. */
  async #readPriceList(options: CollectOptions): Promise<AwsOnDemandRow[]> {
    const cachePath = this.#options.cachePath ?? process.env[AWS_CACHE_PATH_ENV] ?? undefined;
    if (cachePath && (await fileExists(cachePath))) {
      options.onProgress?.(`aws: reading EC2 prices from ${cachePath}`);
      return readOnDemandRows(cachePath);
    }
    const baseUrl =
      this.#options.priceListUrl ?? (process.env[AWS_PRICE_LIST_URL_ENV] || DEFAULT_AWS_PRICE_LIST_BASE_URL);
    const temporary = cachePath ? undefined : await mkdtemp(path.join(tmpdir(), 'dstack-aws-prices-'));
    const file = cachePath ?? path.join(temporary as string, 'index.csv');
    try {
      await downloadBulkPriceList(baseUrl, file, options);
      return await readOnDemandRows(file);
    } finally {
      if (temporary) await rm(temporary, { recursive: true, force: true });
    }
  }
}

/** A price-list row as an on-demand offer, with its GPUs when EC2 described them. */
function onDemandOffer(row: AwsOnDemandRow, gpus: ReadonlyMap<string, AwsGpuDetails>): CatalogItem {
  const gpu = row.gpuCount > 0 ? gpus.get(row.instanceName) : undefined;
  return createCatalogItem({
    provider: AWS_BACKEND_TYPE,
    instanceName: row.instanceName,
    location: row.location,
    price: row.price,
    cpu: row.cpu,
    memory: row.memory,
    ...(gpu
      ? { gpuCount: row.gpuCount, gpuName: gpu.name, gpuMemory: gpu.memory, gpuVendor: gpu.vendor }
      : {}),
  });
}

/**
 * The provider the plugin descriptor carries (`catalogProvider`): its settings come from the
 * environment at each collection (`DSTACK_AWS_PRICE_LIST_URL`, `AWS_CACHE_PATH`, the SDK's).
 */
export const awsCatalogProvider = new AwsCatalogProvider();
