/**
 * gpuhunt's Azure provider (`providers/azure.py`): an offline collector
 * (`dstack-catalog collect azure`) that reads the subscription's VM sizes from Compute's resource
 * SKUs (vCPUs, memory, GPU count; the GPU model from the size's series) and every region's prices
 * from the Azure Retail Prices API (Linux pay-as-you-go and spot meters), one region at a time.
 */
import { rootCertificates } from 'node:tls';
import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import { Agent, type Dispatcher, request } from 'undici';
import { AzureClients } from './azure-clients.js';
import { AZURE_BACKEND_TYPE, type AzureConfig, type AzureCreds } from './azure-config.js';
import { azureGpuOf, isPublishedVmSize, isRetiredVmSize } from './azure-vm-series.js';

/** The Retail Prices API. */
export const AZURE_RETAIL_PRICES_URL = 'https://prices.azure.com/api/retail/prices';

/** gpuhunt's `prices_filters`: Linux pay-as-you-go meters of virtual machines. */
const PRICES_FILTERS = [
  "serviceName eq 'Virtual Machines'",
  "priceType eq 'Consumption'",
  "contains(productName, 'Windows') eq false",
  "contains(productName, 'Dedicated') eq false",
  // Low Priority meters retire in 2025; their VMs are spot VMs now.
  "contains(meterName, 'Low Priority') eq false",
];

/** Regions asked at once (gpuhunt's 32 threads). */
const PARALLEL_REGIONS = 32;
/** Throttled (429) requests are asked again this many times. */
const THROTTLE_RETRIES = 10;

export interface AzureCatalogProviderSettings {
  /** Default: env `AZURE_SUBSCRIPTION_ID` (gpuhunt's). */
  subscriptionId?: string;
  /** Default: env `AZURE_TENANT_ID`, else the default credential's own tenant. */
  tenantId?: string;
  /** Default `{type: 'default'}`: `DefaultAzureCredential`, as gpuhunt. */
  creds?: AzureCreds;
  /** Resource Manager's endpoint. Default: env `DSTACK_AZURE_ENDPOINT_URL`, else Azure's. */
  endpointUrl?: string;
  /** Entra ID's authority host. Default: env `DSTACK_AZURE_AUTHORITY_HOST`, else Azure's. */
  authorityHost?: string;
  /** PEM certificates trusted besides the system's, for every endpoint (an emulator's). Default none. */
  caCertificates?: string;
  /** The Retail Prices API. Default: env `DSTACK_AZURE_PRICES_URL`, else `https://prices.azure.com/api/retail/prices`. */
  pricesUrl?: string;
  /** How long to wait before asking again after a 429 without `Retry-After`, in ms. Default 3000 (gpuhunt's). */
  throttleDelayMs?: number;
  /** The undici dispatcher price requests go through. Default: one trusting `caCertificates`, else undici's global one. */
  dispatcher?: Dispatcher;
}

/** One meter of the Retail Prices API, the fields the collector reads. */
interface RetailPrice {
  armSkuName: string;
  armRegionName: string;
  meterName: string;
  retailPrice: number;
}

interface RetailPricesPage {
  Items: RetailPrice[];
  NextPageLink?: string | null;
}

/** A size as its resource SKU describes it. */
interface VmSpec {
  cpu: number;
  memory: number;
  gpuCount: number;
  gpuName: string | null;
  gpuMemory: number | null;
}

/**
 * Collects Azure's offers into `azure.csv` with gpuhunt's semantics: the sizes of the
 * subscription's resource SKUs (retired series and sizes without vCPUs or memory skipped, GPU
 * sizes whose GPU it cannot name skipped), priced in each region the SKUs list from its Linux
 * pay-as-you-go and spot meters (a meter named `… Spot` is spot; free meters are skipped),
 * `disk_size` unset, cheapest first; the published catalog keeps gpuhunt's series.
 */
export class AzureCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = AZURE_BACKEND_TYPE;
  readonly #settings: AzureCatalogProviderSettings;

  constructor(settings: AzureCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const { specs, regions } = await this.#specsAndRegions(options);
    options.onProgress?.(`${specs.size} VM sizes in ${regions.length} regions`);
    const dispatcher = this.#dispatcher();
    const perRegion = new Map<string, CatalogItem[]>();
    const queue = [...regions];
    const worker = async () => {
      for (let region = queue.shift(); region !== undefined; region = queue.shift()) {
        options.signal?.throwIfAborted();
        perRegion.set(region, await this.#regionItems(region, specs, dispatcher, options));
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_REGIONS, regions.length) }, worker));
    // Regions in name order, then by price keeping that order among equal prices: the same rows
    // in the same order on every run.
    const items = regions.flatMap((region) => perRegion.get(region) ?? []).sort((a, b) => a.price - b.price);
    return options.applyFilter === false
      ? items
      : items.filter((item) => isPublishedVmSize(item.instanceName));
  }

  #config(): AzureConfig {
    const settings = this.#settings;
    const subscriptionId = settings.subscriptionId ?? process.env.AZURE_SUBSCRIPTION_ID;
    if (!subscriptionId) throw new Error('AZURE_SUBSCRIPTION_ID: set it to collect the azure catalog');
    const endpoint = settings.endpointUrl ?? process.env.DSTACK_AZURE_ENDPOINT_URL;
    const authority = settings.authorityHost ?? process.env.DSTACK_AZURE_AUTHORITY_HOST;
    return {
      type: AZURE_BACKEND_TYPE,
      tenant_id: settings.tenantId ?? process.env.AZURE_TENANT_ID ?? '',
      subscription_id: subscriptionId,
      creds: settings.creds ?? { type: 'default' },
      ...(endpoint ? { endpoint_url: endpoint } : {}),
      ...(authority ? { authority_host: authority } : {}),
      ...(settings.caCertificates ? { ca_certificates: settings.caCertificates } : {}),
    } as AzureConfig;
  }

  #dispatcher(): Dispatcher | undefined {
    if (this.#settings.dispatcher) return this.#settings.dispatcher;
    const ca = this.#settings.caCertificates;
    return ca ? new Agent({ connect: { ca: [...rootCertificates, ca] } }) : undefined;
  }

  /** gpuhunt's `get_specs_and_regions`: every `virtualMachines` SKU, and every region any is in. */
  async #specsAndRegions(
    options: CollectOptions,
  ): Promise<{ specs: Map<string, VmSpec>; regions: string[] }> {
    const compute = new AzureClients(this.#config()).compute;
    const specs = new Map<string, VmSpec>();
    const regions = new Set<string>();
    for await (const sku of compute.resourceSkus.list()) {
      if (sku.resourceType !== 'virtualMachines' || !sku.name) continue;
      for (const location of sku.locations ?? []) regions.add(location.toLowerCase());
      if (isRetiredVmSize(sku.name) || specs.has(sku.name)) continue;
      const capabilities = new Map((sku.capabilities ?? []).map((each) => [each.name, each.value]));
      const cpu = capabilities.get('vCPUs');
      const memory = capabilities.get('MemoryGB');
      if (!cpu || !memory) {
        options.onProgress?.(`skipped ${sku.name}: no ${cpu ? 'MemoryGB' : 'vCPUs'}`);
        continue;
      }
      const gpuCount = Number(capabilities.get('GPUs') ?? 0);
      const { gpuName, gpuMemoryGb } =
        gpuCount > 0 ? azureGpuOf(sku.name) : { gpuName: null, gpuMemoryGb: null };
      if (gpuCount > 0 && gpuName === null) {
        options.onProgress?.(`skipped ${sku.name}: cannot name its GPU`);
        continue;
      }
      specs.set(sku.name, {
        cpu: Math.trunc(Number(cpu)),
        memory: Number(memory),
        gpuCount,
        gpuName,
        gpuMemory: gpuMemoryGb,
      });
    }
    return { specs, regions: [...regions].sort() };
  }

  /** One region's rows, from its meters in the API's order. */
  async #regionItems(
    region: string,
    specs: ReadonlyMap<string, VmSpec>,
    dispatcher: Dispatcher | undefined,
    options: CollectOptions,
  ): Promise<CatalogItem[]> {
    const items: CatalogItem[] = [];
    for await (const meter of this.#regionMeters(region, dispatcher, options)) {
      if (!meter.armSkuName || isRetiredVmSize(meter.armSkuName)) continue;
      const price = Number(meter.retailPrice);
      if (Math.abs(price) < 1e-9) continue;
      const spec = specs.get(meter.armSkuName);
      if (!spec) continue;
      items.push(
        createCatalogItem({
          provider: AZURE_BACKEND_TYPE,
          instanceName: meter.armSkuName,
          location: meter.armRegionName,
          price,
          cpu: spec.cpu,
          memory: spec.memory,
          gpuCount: spec.gpuCount,
          gpuName: spec.gpuName,
          gpuMemory: spec.gpuMemory,
          gpuVendor: spec.gpuCount > 0 ? 'nvidia' : null,
          spot: meter.meterName.includes('Spot'),
          diskSize: null,
        }),
      );
    }
    return items;
  }

  /**
   * The region's meters, page after page: `NextPageLink` names the next page; when the API leaves
   * it out, `$skip` past the meters read so far goes on until a page is empty (gpuhunt's walk).
   */
  async *#regionMeters(
    region: string,
    dispatcher: Dispatcher | undefined,
    options: CollectOptions,
  ): AsyncGenerator<RetailPrice> {
    const base = this.#settings.pricesUrl ?? process.env.DSTACK_AZURE_PRICES_URL ?? AZURE_RETAIL_PRICES_URL;
    const filter = [...PRICES_FILTERS, `armRegionName eq '${region}'`].join(' and ');
    const pageUrl = (skip: number) => {
      const url = new URL(base);
      url.searchParams.set('$filter', filter);
      if (skip > 0) url.searchParams.set('$skip', String(skip));
      return url.toString();
    };
    let read = 0;
    let url: string | undefined = pageUrl(0);
    while (url !== undefined) {
      const page = await this.#page(url, dispatcher, options);
      if (page.Items.length === 0) return;
      yield* page.Items;
      read += page.Items.length;
      url = page.NextPageLink ? page.NextPageLink : pageUrl(read);
    }
  }

  async #page(
    url: string,
    dispatcher: Dispatcher | undefined,
    options: CollectOptions,
  ): Promise<RetailPricesPage> {
    for (let attempt = 0; ; attempt++) {
      const answer = await request(url, { dispatcher, signal: options.signal });
      if (answer.statusCode === 429 && attempt < THROTTLE_RETRIES) {
        await answer.body.dump();
        const retryAfter = Number(answer.headers['retry-after']);
        const delay = Number.isFinite(retryAfter)
          ? retryAfter * 1000
          : (this.#settings.throttleDelayMs ?? 3000);
        options.onProgress?.(`throttled by the Retail Prices API; asking again in ${delay} ms`);
        await new Promise((resolve) => setTimeout(resolve, delay));
        continue;
      }
      if (answer.statusCode !== 200) {
        throw new Error(`GET ${url} failed: HTTP ${answer.statusCode}: ${await answer.body.text()}`);
      }
      const page = (await answer.body.json()) as Partial<RetailPricesPage>;
      if (!Array.isArray(page.Items)) throw new Error(`GET ${url}: the answer has no Items`);
      return { Items: page.Items, NextPageLink: page.NextPageLink ?? null };
    }
  }
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const azureCatalogProvider = new AzureCatalogProvider();
