import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  isNvidiaSuperchip,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import type { Dispatcher } from 'undici';
import { LAMBDA_DEFAULT_ENDPOINT_URL, LambdaApi } from './lambda-api.js';

/** gpuhunt's name for Lambda's catalog (dstack's backend type is `lambda`): `lambdalabs.csv`. */
export const LAMBDA_CATALOG_PROVIDER_NAME = 'lambdalabs';
/** gpuhunt's flag on offers of an ARM (Grace) instance. */
export const LAMBDA_ARM_FLAG = 'lambda-arm';
/** gpuhunt's GiB → GB factor for memory and disk (it multiplies by 1.074). */
const GIB_TO_GB = 1.074;

export interface LambdaCatalogProviderSettings {
  /** Default: env `LAMBDALABS_TOKEN` (gpuhunt's), read when `collect` runs. */
  apiKey?: string;
  /** Default: env `DSTACK_LAMBDA_ENDPOINT_URL`, else Lambda's API. */
  endpointUrl?: string;
  dispatcher?: Dispatcher;
}

/**
 * `1x A10 (24 GB PCIe)` → 1, `A10`, 24 (gpuhunt's `_parse_description`: one digit of count, an
 * optional `Tesla `, spaces dropped from the name); null when the description names no GPU.
 */
export function parseLambdaDescription(
  description: string,
): { count: number; name: string; memoryGb: number } | null {
  const match = /^(\d)x (?:Tesla )?(.+) \((\d+) GB/.exec(description);
  if (!match) return null;
  const [, count, name, memory] = match as unknown as [string, string, string, string];
  return { count: Number(count), name: name.replaceAll(' ', ''), memoryGb: Number(memory) };
}

/**
 * Collects Lambda's offers ahead of time into `lambdalabs.csv` (an offline provider, as gpuhunt
 * classifies it), with gpuhunt's semantics: every instance type whose description names its GPUs,
 * in every region Lambda has images in, on-demand only (Lambda has no spot), memory and disk in
 * GB as gpuhunt converts them, superchips (GH200) as ARM with the `lambda-arm` flag, cheapest first.
 * `dstack-catalog collect lambdalabs --output lambdalabs.csv` runs it with `LAMBDALABS_TOKEN` set.
 */
export class LambdaCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = LAMBDA_CATALOG_PROVIDER_NAME;
  readonly #settings: LambdaCatalogProviderSettings;

  constructor(settings: LambdaCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const apiKey = this.#settings.apiKey ?? process.env.LAMBDALABS_TOKEN;
    if (!apiKey)
      throw new Error('LAMBDALABS_TOKEN: set it to a Lambda API key to collect the lambdalabs catalog');
    const api = new LambdaApi({
      apiKey,
      endpointUrl:
        this.#settings.endpointUrl ?? process.env.DSTACK_LAMBDA_ENDPOINT_URL ?? LAMBDA_DEFAULT_ENDPOINT_URL,
      dispatcher: this.#settings.dispatcher,
      timeoutMs: 10_000,
    });
    const regions = [
      ...new Set((await api.listImages(options.signal)).map((image) => image.region.name)),
    ].sort();
    const types = await api.listInstanceTypes(options.signal);
    const items: CatalogItem[] = [];
    for (const { instance_type: type } of Object.values(types)) {
      const gpus = parseLambdaDescription(type.description);
      if (gpus === null) {
        options.onProgress?.(
          `skipped ${type.name}: no GPU in its description ${JSON.stringify(type.description)}`,
        );
        continue;
      }
      const arm = isNvidiaSuperchip(gpus.name);
      for (const region of regions) {
        items.push(
          createCatalogItem({
            provider: LAMBDA_CATALOG_PROVIDER_NAME,
            instanceName: type.name,
            location: region,
            price: type.price_cents_per_hour / 100,
            cpuArch: arm ? 'arm' : 'x86',
            cpu: type.specs.vcpus,
            memory: type.specs.memory_gib * GIB_TO_GB,
            gpuVendor: gpus.count > 0 ? 'nvidia' : undefined,
            gpuCount: gpus.count,
            gpuName: gpus.name,
            gpuMemory: gpus.memoryGb,
            spot: false,
            diskSize: type.specs.storage_gib * GIB_TO_GB,
            flags: arm ? [LAMBDA_ARM_FLAG] : [],
          }),
        );
      }
    }
    options.onProgress?.(
      `${items.length} offers of ${Object.keys(types).length} types in ${regions.length} regions`,
    );
    // gpuhunt sorts by price alone; a stable sort keeps its order among equal prices.
    return items.sort((a, b) => a.price - b.price);
  }
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const lambdaCatalogProvider = new LambdaCatalogProvider();
