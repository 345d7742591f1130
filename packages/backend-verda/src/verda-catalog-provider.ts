import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import type { Dispatcher } from 'undici';
import { VERDA_DEFAULT_ENDPOINT_URL, VerdaApi, type VerdaInstanceType } from './verda-api.js';
import { VERDA_BACKEND_TYPE } from './verda-config.js';

/** gpuhunt's GPU names by Verda's GPU descriptions (`GPU_MAP`), matched whole. */
const GPU_NAMES: ReadonlyArray<[RegExp, string]> = [
  [/^\d+x B200 SXM6 180GB$/, 'B200'],
  [/^\d+x B300 SXM6 268GB$/, 'B300'],
  [/^\d+x H200 SXM5 141GB$/, 'H200'],
  [/^\d+x H100 SXM5 80GB$/, 'H100'],
  [/^\d+x A100 SXM4 80GB$/, 'A100'],
  [/^\d+x A100 SXM4 40GB$/, 'A100'],
  [/^\d+x RTX6000 Ada 48GB$/, 'RTX6000Ada'],
  [/^\d+x RTX 6000 Ada 48GB$/, 'RTX6000Ada'],
  [/^\d+x RTX PRO 6000 96GB$/, 'RTXPRO6000'],
  [/^\d+x RTX A6000 48GB$/, 'A6000'],
  [/^\d+x Tesla V100 16GB$/, 'V100'],
  [/^\d+x L40S 48GB$/, 'L40S'],
  [/^\d+x AMD 7900XTX$/, 'RX7900XTX'],
];
/** gpuhunt's `filter()` drops Verda's AMD GPUs. */
const AMD_GPUS = new Set(['RX7900XTX']);

/** gpuhunt's `get_gpu_name`: the GPU name of a Verda GPU description, or null. */
export function verdaGpuName(description: string): string | null {
  return GPU_NAMES.find(([pattern]) => pattern.test(description))?.[1] ?? null;
}

export interface VerdaCatalogProviderSettings {
  /** Default: env `VERDA_CLIENT_ID` (gpuhunt's). */
  clientId?: string;
  /** Default: env `VERDA_CLIENT_SECRET`. */
  clientSecret?: string;
  /** Default: env `DSTACK_VERDA_ENDPOINT_URL`, else Verda's API. */
  endpointUrl?: string;
  dispatcher?: Dispatcher;
}

/**
 * Collects Verda's offers into `verda.csv` (an offline provider, as gpuhunt classifies it), with
 * gpuhunt's semantics: every instance type in every location, on-demand and spot (prices from the
 * API's strings), memory in GB as Verda gives it, the GPU name from the description (types whose
 * GPUs it cannot name are skipped), per-GPU memory = total / count, no fixed disk, cheapest first;
 * the published catalog leaves out AMD GPUs. `dstack-catalog collect verda` runs it.
 */
export class VerdaCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = VERDA_BACKEND_TYPE;
  readonly #settings: VerdaCatalogProviderSettings;

  constructor(settings: VerdaCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const clientId = this.#settings.clientId ?? process.env.VERDA_CLIENT_ID;
    const clientSecret = this.#settings.clientSecret ?? process.env.VERDA_CLIENT_SECRET;
    if (!clientId || !clientSecret) {
      throw new Error('VERDA_CLIENT_ID, VERDA_CLIENT_SECRET: set both to collect the verda catalog');
    }
    const api = new VerdaApi({
      clientId,
      clientSecret,
      endpointUrl:
        this.#settings.endpointUrl ?? process.env.DSTACK_VERDA_ENDPOINT_URL ?? VERDA_DEFAULT_ENDPOINT_URL,
      dispatcher: this.#settings.dispatcher,
    });
    const types = await api.listInstanceTypes();
    const locations = (await api.listLocations()).map((location) => location.code);
    const items: CatalogItem[] = [];
    // gpuhunt's order: spot first, then location, then type (itertools.product).
    for (const spot of [true, false]) {
      for (const location of locations) {
        for (const type of types) {
          const item = verdaCatalogItem(type, spot, location);
          if (item === null) {
            options.onProgress?.(
              `skipped ${type.instance_type}: no GPU name for ${JSON.stringify(type.gpu.description)}`,
            );
            continue;
          }
          if (options.applyFilter !== false && item.gpuName !== null && AMD_GPUS.has(item.gpuName)) continue;
          items.push(item);
        }
      }
    }
    return items.sort((a, b) => a.price - b.price);
  }
}

function verdaCatalogItem(type: VerdaInstanceType, spot: boolean, location: string): CatalogItem | null {
  const count = type.gpu.number_of_gpus;
  const gpuName = count ? verdaGpuName(type.gpu.description) : null;
  if (count && gpuName === null) return null;
  return createCatalogItem({
    provider: VERDA_BACKEND_TYPE,
    instanceName: type.instance_type,
    location,
    spot,
    price: Number(spot ? type.spot_price : type.price_per_hour),
    cpu: Math.trunc(type.cpu.number_of_cores),
    memory: type.memory.size_in_gigabytes,
    gpuCount: count,
    gpuName,
    gpuMemory: count ? type.gpu_memory.size_in_gigabytes / count : null,
    gpuVendor: count ? (gpuName !== null && AMD_GPUS.has(gpuName) ? 'amd' : 'nvidia') : undefined,
    diskSize: null,
  });
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const verdaCatalogProvider = new VerdaCatalogProvider();
