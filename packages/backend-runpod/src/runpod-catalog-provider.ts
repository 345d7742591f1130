/**
 * gpuhunt's RunPod provider: an offline collector (`dstack-catalog collect runpod`) asking RunPod's
 * GraphQL API, without a key, for every GPU type's lowest price at each GPU count up to the
 * largest and at each location (listed Secure Cloud data centers, Community Cloud countries),
 * Instant Cluster offers, and CPU flavors per data center; the rows are RunPod's `runpod.csv`.
 */
import {
  type AcceleratorVendor,
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import type { Dispatcher } from 'undici';
import { RunpodApi } from './runpod-api.js';
import { RUNPOD_BACKEND_TYPE, RUNPOD_DEFAULT_ENDPOINT_URL } from './runpod-config.js';
import { runpodGpuName, runpodGpuVendor } from './runpod-gpu-names.js';
import {
  CPU_DATA_CENTERS_QUERY,
  CPU_FLAVORS_QUERY,
  GPU_LOCATIONS_QUERY,
  GPU_PRICES_QUERY,
  GPU_TYPE_NAMES_QUERY,
} from './runpod-queries.js';

/** The CUDA version gpuhunt asks hosts for (`RunpodProvider.MIN_CUDA_VERSION`); pods are deployed with it too. */
export const RUNPOD_MIN_CUDA_VERSION = '12.8';
/** Locations gpuhunt does not publish (`RunpodProvider.filter`): network problems. */
const UNPUBLISHED_LOCATIONS: ReadonlySet<string> = new Set(['AR']);
/** Pod counts of an Instant Cluster (the API does not say; gpuhunt's 2 to 8). */
const CLUSTER_POD_COUNTS = [2, 3, 4, 5, 6, 7, 8];
/** Queries in flight at once (gpuhunt's 10 threads). */
const PARALLEL_QUERIES = 10;

export interface RunpodCatalogProviderSettings {
  /** The GraphQL endpoint. Default: env `DSTACK_RUNPOD_ENDPOINT_URL`, else `https://api.runpod.io/graphql`. */
  endpointUrl?: string;
  /** The undici dispatcher requests go through. Default undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-request limit in milliseconds. Default 10 000 (gpuhunt's). */
  timeoutMs?: number;
}

interface LowestPrice {
  minVcpu: number | null;
  minMemory: number | null;
  stockStatus: string | null;
}

interface PricedGpuType {
  id: string;
  memoryInGb: number;
  securePrice: number | null;
  communityPrice: number | null;
  maxGpuCount: number;
  clusterPrice: number | null;
  nodeGroupDatacenters: { id: string }[] | null;
  lowestPrice: LowestPrice | null;
}

interface CpuFlavor {
  id: string;
  minVcpu: number | null;
  maxVcpu: number | null;
  ramMultiplier: number | null;
  diskLimitPerVcpu: number | null;
  specifics: { stockStatus: string | null; securePrice: number | null } | null;
}

/** One `lowestPriceInput` of gpuhunt's: a count at a data center (Secure Cloud) or a country (Community Cloud). */
interface PriceQuery {
  gpuCount: number;
  secureCloud: boolean;
  location: string;
}

/** gpuhunt's `_cpu_size_ladder`: doubling from the minimum, and the maximum. */
export function cpuSizeLadder(minVcpu: number, maxVcpu: number): number[] {
  const sizes: number[] = [];
  for (let size = minVcpu; size <= maxVcpu; size *= 2) sizes.push(size);
  if (sizes.at(-1) !== maxVcpu) sizes.push(maxVcpu);
  return [...new Set(sizes)].sort((left, right) => left - right);
}

/** Runs `work` on every item, `limit` at a time, keeping the order. */
async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

export class RunpodCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = RUNPOD_BACKEND_TYPE;
  readonly #settings: RunpodCatalogProviderSettings;

  constructor(settings: RunpodCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  /**
   * Every RunPod offer, cheapest first: GPU offers on demand (no spot rows, as gpuhunt),
   * `runpod-cluster` rows with `pod_counts`, `runpod-cpu` rows with their largest disk. A
   * location's failing query is reported through `onProgress` and skipped, as gpuhunt logs it.
   * `applyFilter` (default true) leaves out the locations gpuhunt does not publish.
   */
  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const api = new RunpodApi({
      endpointUrl:
        this.#settings.endpointUrl ?? process.env.DSTACK_RUNPOD_ENDPOINT_URL ?? RUNPOD_DEFAULT_ENDPOINT_URL,
      dispatcher: this.#settings.dispatcher,
      timeoutMs: this.#settings.timeoutMs ?? 10_000,
    });
    const { signal } = options;
    const names = await this.#gpuNames(api, signal);
    const items = [
      ...(await this.#gpuOffers(api, names, options)),
      ...(await this.#clusterOffers(api, names, signal)),
      ...(await this.#cpuOffers(api, options)),
    ];
    const kept =
      options.applyFilter === false
        ? items
        : items.filter((item) => !UNPUBLISHED_LOCATIONS.has(item.location));
    return kept.sort((left, right) => left.price - right.price);
  }

  async #gpuNames(
    api: RunpodApi,
    signal: AbortSignal | undefined,
  ): Promise<Map<string, { vendor: AcceleratorVendor; name: string }>> {
    const data = await api.graphql<{ gpuTypes: { id: string; manufacturer: string; displayName: string }[] }>(
      'gpuTypes',
      GPU_TYPE_NAMES_QUERY,
      {},
      signal,
    );
    const names = new Map<string, { vendor: AcceleratorVendor; name: string }>();
    for (const gpuType of data.gpuTypes) {
      const vendor = runpodGpuVendor(gpuType.manufacturer ?? '');
      const name = vendor === null ? null : runpodGpuName(vendor, gpuType.displayName);
      if (vendor !== null && name !== null) names.set(gpuType.id, { vendor, name });
    }
    return names;
  }

  async #gpuOffers(
    api: RunpodApi,
    names: Map<string, { vendor: AcceleratorVendor; name: string }>,
    options: CollectOptions,
  ): Promise<CatalogItem[]> {
    const locations = await api.graphql<{
      countryCodes: (string | null)[];
      dataCenters: { id: string; listed: boolean }[];
      gpuTypes: { maxGpuCount: number }[];
    }>('gpuTypes', GPU_LOCATIONS_QUERY, {}, options.signal);
    const dataCenters = locations.dataCenters.filter((center) => center.listed).map((center) => center.id);
    const countries = locations.countryCodes.filter((code): code is string => code !== null);
    const maxGpuCount = Math.max(0, ...locations.gpuTypes.map((gpuType) => gpuType.maxGpuCount));
    const queries: PriceQuery[] = [];
    for (let gpuCount = 1; gpuCount <= maxGpuCount; gpuCount++) {
      for (const location of dataCenters) queries.push({ gpuCount, secureCloud: true, location });
      for (const location of countries) queries.push({ gpuCount, secureCloud: false, location });
    }
    options.onProgress?.(`runpod: ${queries.length} price queries`);
    const answers = await mapLimited(queries, PARALLEL_QUERIES, async (query) => {
      try {
        return await this.#prices(api, query, options.signal);
      } catch (error) {
        if (options.signal?.aborted) throw error;
        options.onProgress?.(
          `runpod: failed to get pods data for ${query.location}: ${(error as Error).message}`,
        );
        return [];
      }
    });
    return queries.flatMap((query, index) =>
      (answers[index] ?? []).flatMap((gpuType) => {
        const listed = names.get(gpuType.id);
        const lowest = gpuType.lowestPrice;
        const price = query.secureCloud ? gpuType.securePrice : gpuType.communityPrice;
        if (!listed || !lowest || lowest.stockStatus === null || !price) return [];
        return [
          createCatalogItem({
            provider: RUNPOD_BACKEND_TYPE,
            instanceName: gpuType.id,
            location: query.location,
            price: query.gpuCount * price,
            cpu: lowest.minVcpu ?? 0,
            memory: lowest.minMemory ?? 0,
            gpuVendor: listed.vendor,
            gpuCount: query.gpuCount,
            gpuName: listed.name,
            gpuMemory: gpuType.memoryInGb,
          }),
        ];
      }),
    );
  }

  #prices(api: RunpodApi, query: PriceQuery, signal: AbortSignal | undefined): Promise<PricedGpuType[]> {
    const lowestPriceInput = {
      secureCloud: query.secureCloud,
      ...(query.secureCloud ? { dataCenterId: query.location } : { countryCode: query.location }),
      gpuCount: query.gpuCount,
      minDisk: null,
      minMemoryInGb: null,
      minVcpuCount: null,
      minCudaVersion: RUNPOD_MIN_CUDA_VERSION,
    };
    return api
      .graphql<{ gpuTypes: PricedGpuType[] }>('gpuTypes', GPU_PRICES_QUERY, { lowestPriceInput }, signal)
      .then((data) => data.gpuTypes);
  }

  async #clusterOffers(
    api: RunpodApi,
    names: Map<string, { vendor: AcceleratorVendor; name: string }>,
    signal: AbortSignal | undefined,
  ): Promise<CatalogItem[]> {
    // gpuCount 8 only to learn the CPUs and memory of a cluster node.
    const data = await api.graphql<{ gpuTypes: PricedGpuType[] }>(
      'gpuTypes',
      GPU_PRICES_QUERY,
      { gpuTypesInput: { cluster: true }, lowestPriceInput: { gpuCount: 8 } },
      signal,
    );
    return data.gpuTypes.flatMap((gpuType) => {
      const listed = names.get(gpuType.id);
      const cpu = gpuType.lowestPrice?.minVcpu;
      const memory = gpuType.lowestPrice?.minMemory;
      if (!listed || cpu == null || memory == null || gpuType.clusterPrice === null) return [];
      return (gpuType.nodeGroupDatacenters ?? []).map((location) =>
        createCatalogItem({
          provider: RUNPOD_BACKEND_TYPE,
          instanceName: gpuType.id,
          location: location.id,
          price: (gpuType.clusterPrice ?? 0) * gpuType.maxGpuCount,
          cpu,
          memory,
          gpuVendor: listed.vendor,
          gpuCount: gpuType.maxGpuCount,
          gpuName: listed.name,
          gpuMemory: gpuType.memoryInGb,
          flags: ['runpod-cluster'],
          providerData: { pod_counts: [...CLUSTER_POD_COUNTS] },
        }),
      );
    });
  }

  async #cpuOffers(api: RunpodApi, options: CollectOptions): Promise<CatalogItem[]> {
    const centers = await api.graphql<{ dataCenters: { id: string; listed: boolean }[] }>(
      'dataCenters',
      CPU_DATA_CENTERS_QUERY,
      {},
      options.signal,
    );
    const listed = centers.dataCenters.filter((center) => center.listed).map((center) => center.id);
    const flavorsByCenter = await mapLimited(listed, PARALLEL_QUERIES, async (dataCenterId) => {
      try {
        const data = await api.graphql<{ cpuFlavors: CpuFlavor[] }>(
          'cpuFlavors',
          CPU_FLAVORS_QUERY,
          { dataCenterId },
          options.signal,
        );
        return data.cpuFlavors;
      } catch (error) {
        if (options.signal?.aborted) throw error;
        options.onProgress?.(
          `runpod: failed to get cpuFlavors for ${dataCenterId}: ${(error as Error).message}`,
        );
        return [];
      }
    });
    return listed.flatMap((dataCenterId, index) =>
      (flavorsByCenter[index] ?? []).flatMap((flavor) => cpuFlavorOffers(dataCenterId, flavor)),
    );
  }
}

/** gpuhunt's `_make_cpu_offers` for one flavor: a row per size of its ladder, price scaled from the smallest. */
function cpuFlavorOffers(dataCenterId: string, flavor: CpuFlavor): CatalogItem[] {
  const basePrice = flavor.specifics?.securePrice;
  const { minVcpu, maxVcpu, ramMultiplier, diskLimitPerVcpu } = flavor;
  if (flavor.specifics?.stockStatus == null || basePrice == null) return [];
  if (minVcpu == null || maxVcpu == null || ramMultiplier == null || diskLimitPerVcpu == null) return [];
  if (minVcpu <= 0 || maxVcpu <= 0 || minVcpu > maxVcpu || Math.trunc(diskLimitPerVcpu) <= 0) return [];
  return cpuSizeLadder(Math.trunc(minVcpu), Math.trunc(maxVcpu)).map((vcpu) => {
    const memory = vcpu * Math.trunc(ramMultiplier);
    return createCatalogItem({
      provider: RUNPOD_BACKEND_TYPE,
      instanceName: `${flavor.id}-${vcpu}-${memory}`,
      location: dataCenterId,
      price: (basePrice * vcpu) / minVcpu,
      cpu: vcpu,
      memory,
      diskSize: vcpu * Math.trunc(diskLimitPerVcpu),
      flags: ['runpod-cpu'],
    });
  });
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const runpodCatalogProvider = new RunpodCatalogProvider();
