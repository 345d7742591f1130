/**
 * gpuhunt's OCI provider (`gpuhunt/providers/oci.py`): Oracle's public Cost Estimator documents
 * (`shapes.json`, `products.json`) priced in USD per hour, one row per shape and region the
 * tenancy lists (`ListRegions`), a half-price spot row where the shape allows preemptible
 * instances (flag `oci-spot`), cheapest first. Hidden, inactive, non-VM/BM, non
 * standard/gpu/optimized and Ampere A1 shapes are skipped, as are shapes whose data is incomplete.
 */
import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  findAccelerators,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import { OciClients } from './oci-clients.js';
import { OCI_BACKEND_TYPE } from './oci-config.js';

/** Where Oracle publishes the Cost Estimator's documents. */
export const OCI_COST_ESTIMATOR_URL = 'https://www.oracle.com/a/ocom/docs/cloudestimator2/data';

interface EstimatorShape {
  name: string;
  hidden: boolean;
  status: string;
  allowPreemptible: boolean;
  bundleMemoryQty?: number | null;
  gpuQty?: number | null;
  gpuMemoryQty?: number | null;
  processorType: { value: string };
  shapeType: { value: string };
  subType: { value: string };
  products: { type: { value: string }; partNumber: string; qty?: number | null }[];
}

interface EstimatorProduct {
  partNumber: string;
  billingModel: string;
  pricetype: string;
  currencyCodeLocalizations: { currencyCode: string; prices: { model: string; value: number }[] }[];
}

class CostEstimatorDataError extends Error {}

/** gpuhunt's `get_product_price_usd_per_hour`. */
function usdPerHour(product: EstimatorProduct): number {
  if (product.billingModel !== 'UCM')
    throw new CostEstimatorDataError(`billing model ${product.billingModel}`);
  if (product.pricetype !== 'HOUR') throw new CostEstimatorDataError(`price type ${product.pricetype}`);
  const usd = product.currencyCodeLocalizations.find((each) => each.currencyCode === 'USD');
  if (usd?.prices.length !== 1)
    throw new CostEstimatorDataError(`no single USD price for ${product.partNumber}`);
  const price = usd.prices[0] as { model: string; value: number };
  if (price.model !== 'PAY_AS_YOU_GO') throw new CostEstimatorDataError(`pricing model ${price.model}`);
  return price.value;
}

/** gpuhunt's `get_gpu_name`: from the shape's name. */
export function ociShapeGpuName(shapeName: string): string | null {
  const parts = shapeName.toUpperCase().split(/[.-]/);
  if (parts.includes('GPU4')) return 'A100';
  if (parts.includes('GPU3')) return 'V100';
  if (parts.includes('GPU2')) return 'P100';
  const index = parts.indexOf('GPU');
  const candidate = index >= 0 ? parts[index + 1] : undefined;
  if (!candidate) return null;
  return findAccelerators({ names: [candidate], vendors: ['nvidia'] })[0]?.name ?? null;
}

/** gpuhunt's `shape_to_resources`. */
function shapeResources(shape: EstimatorShape, products: ReadonlyMap<string, EstimatorProduct>) {
  // The data says A10 and A100 GPU shapes are ARM; they are not.
  const ampereGpu =
    shape.subType.value === 'gpu' && (shape.name.includes('GPU4') || shape.name.includes('GPU.A10'));
  const arm = shape.processorType.value === 'arm' && !ampereGpu;
  let cpu: { vcpus: number; price: number } | undefined;
  let memory =
    shape.bundleMemoryQty != null ? { gbs: Math.trunc(shape.bundleMemoryQty), price: 0 } : undefined;
  let gpu = { count: 0, memory: null as number | null, name: null as string | null, price: 0 };
  for (const part of shape.products) {
    if (part.qty == null) throw new CostEstimatorDataError('Product quantity not found');
    const qty = Math.trunc(part.qty);
    const details = products.get(part.partNumber);
    if (!details) throw new CostEstimatorDataError(`Could not find product ${part.partNumber}`);
    const price = usdPerHour(details);
    if (part.type.value === 'ocpu') {
      const vcpus = arm ? qty : qty * 2;
      if (shape.gpuQty) {
        const unitMemory = shape.gpuMemoryQty ? shape.gpuMemoryQty / shape.gpuQty : null;
        gpu = {
          count: shape.gpuQty,
          memory: unitMemory,
          name: ociShapeGpuName(shape.name),
          price: price * shape.gpuQty,
        };
        if (!gpu.memory || !gpu.name)
          throw new CostEstimatorDataError(`Incomplete GPU parameters of ${shape.name}`);
        cpu = { vcpus, price: 0 };
      } else {
        cpu = { vcpus, price: price * qty };
      }
    } else if (part.type.value === 'memory') {
      memory = { gbs: qty, price: price * qty };
    } else {
      throw new CostEstimatorDataError(`Unknown product type ${part.type.value}`);
    }
  }
  if (!cpu) throw new CostEstimatorDataError('No ocpu product');
  if (!memory) throw new CostEstimatorDataError('No memory product');
  return { cpu, memory, gpu, price: cpu.price + memory.price + gpu.price };
}

export interface OciCatalogProviderSettings {
  /** The user's API key, as the backend's `client` creds. Default: env `OCI_CLI_USER`, `OCI_CLI_TENANCY`, `OCI_CLI_KEY_CONTENT`, `OCI_CLI_FINGERPRINT`, `OCI_CLI_REGION` (gpuhunt's), else the OCI CLI config file's DEFAULT profile. */
  creds?: { user: string; tenancy: string; key_content: string; fingerprint: string; region: string };
  /** Default: env `DSTACK_OCI_ENDPOINT_URL`, else OCI's own endpoints. */
  endpointUrl?: string;
  /** Default: env `DSTACK_OCI_COST_ESTIMATOR_URL`, else Oracle's (`OCI_COST_ESTIMATOR_URL`). */
  costEstimatorUrl?: string;
}

export class OciCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = OCI_BACKEND_TYPE;
  readonly #settings: OciCatalogProviderSettings;

  constructor(settings: OciCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  #creds() {
    if (this.#settings.creds) return { type: 'client' as const, ...this.#settings.creds };
    const env = process.env;
    if (
      env.OCI_CLI_USER &&
      env.OCI_CLI_TENANCY &&
      env.OCI_CLI_KEY_CONTENT &&
      env.OCI_CLI_FINGERPRINT &&
      env.OCI_CLI_REGION
    ) {
      return {
        type: 'client' as const,
        user: env.OCI_CLI_USER,
        tenancy: env.OCI_CLI_TENANCY,
        key_content: env.OCI_CLI_KEY_CONTENT,
        fingerprint: env.OCI_CLI_FINGERPRINT,
        region: env.OCI_CLI_REGION,
      };
    }
    return { type: 'default' as const, file: '~/.oci/config', profile: 'DEFAULT' };
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const base = (
      this.#settings.costEstimatorUrl ??
      process.env.DSTACK_OCI_COST_ESTIMATOR_URL ??
      OCI_COST_ESTIMATOR_URL
    ).replace(/\/+$/, '');
    const fetchJson = async <T>(resource: string): Promise<T> => {
      const response = await fetch(`${base}/${resource}`, {
        signal: options.signal ?? AbortSignal.timeout(10_000),
      });
      if (!response.ok) throw new Error(`The Cost Estimator answered ${response.status} for ${resource}`);
      return (await response.json()) as T;
    };
    const shapes = (await fetchJson<{ items: EstimatorShape[] }>('shapes.json')).items;
    const products = new Map(
      (await fetchJson<{ items: EstimatorProduct[] }>('products.json')).items.map((each) => [
        each.partNumber,
        each,
      ]),
    );
    const clients = new OciClients({
      creds: this.#creds(),
      endpoint_url: this.#settings.endpointUrl ?? process.env.DSTACK_OCI_ENDPOINT_URL,
    });
    const { items: regions } = await clients.region(clients.credsRegion).identity.listRegions({});
    const items: CatalogItem[] = [];
    for (const shape of shapes) {
      if (
        shape.hidden ||
        shape.status !== 'ACTIVE' ||
        !['vm', 'bm'].includes(shape.shapeType.value) ||
        !['standard', 'gpu', 'optimized'].includes(shape.subType.value) ||
        shape.name.includes('.A1.')
      )
        continue;
      let resources: ReturnType<typeof shapeResources>;
      try {
        resources = shapeResources(shape, products);
      } catch (error) {
        if (error instanceof CostEstimatorDataError) continue;
        throw error;
      }
      for (const region of regions) {
        const row = {
          provider: OCI_BACKEND_TYPE,
          instanceName: shape.name,
          location: region.name ?? '',
          cpu: resources.cpu.vcpus,
          memory: resources.memory.gbs,
          gpuCount: resources.gpu.count,
          gpuName: resources.gpu.name,
          gpuMemory: resources.gpu.memory,
          gpuVendor: resources.gpu.count > 0 ? ('nvidia' as const) : null,
        };
        items.push(createCatalogItem({ ...row, price: resources.price, spot: false }));
        // Preemptible capacity costs 50% less than on-demand (OCI's docs).
        if (shape.allowPreemptible)
          items.push(
            createCatalogItem({ ...row, price: resources.price * 0.5, spot: true, flags: ['oci-spot'] }),
          );
      }
    }
    return items.sort((a, b) => a.price - b.price);
  }
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const ociCatalogProvider = new OciCatalogProvider();
