/**
 * The Cloud Billing Catalog's Compute Engine SKUs (`GET /v1/services/6F81-5844-456A/skus`), as
 * gpuhunt's GCP collector reads them: per region, a core and a RAM SKU per machine family
 * ("N1 Predefined Instance Core running in Americas") and a SKU per GPU ("Nvidia Tesla T4 GPU
 * running in Americas"), OnDemand and Preemptible (spot), priced so that cores·core + GiB·ram
 * (+ GPUs·gpu) gives back the catalog's prices. Derived from the same data as the machine types.
 */
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { GcpApiError } from './gcp-api-error.js';
import { decodePageToken, encodePageToken } from './gcp-compute-resources.js';
import type { GcpEmulatorData } from './gcp-emulator-data.js';

export const COMPUTE_ENGINE_SERVICE_ID = '6F81-5844-456A';

export interface BillingSku {
  readonly name: string;
  readonly skuId: string;
  readonly description: string;
  readonly category: {
    readonly serviceDisplayName: string;
    readonly resourceFamily: string;
    readonly resourceGroup: string;
    readonly usageType: 'OnDemand' | 'Preemptible';
  };
  readonly serviceRegions: readonly string[];
  readonly pricingInfo: readonly unknown[];
  readonly serviceProviderName: string;
}

/** The description's geography, as GCP words it. */
function geographyOf(region: string): string {
  if (region.startsWith('us-') || region.startsWith('northamerica-') || region.startsWith('southamerica-'))
    return 'Americas';
  if (region.startsWith('europe-') || region.startsWith('me-') || region.startsWith('africa-')) return 'EMEA';
  return 'APAC';
}

/** What the Billing Catalog calls each GPU (gpuhunt lowercases and dashes it back). */
const GPU_DESCRIPTIONS: Readonly<Record<string, string>> = {
  'nvidia-tesla-t4': 'Nvidia Tesla T4',
  'nvidia-tesla-v100': 'Nvidia Tesla V100',
  'nvidia-tesla-p100': 'Nvidia Tesla P100',
  'nvidia-tesla-p4': 'Nvidia Tesla P4',
  'nvidia-tesla-a100': 'Nvidia Tesla A100',
  'nvidia-a100-80gb': 'Nvidia Tesla A100 80GB',
  'nvidia-l4': 'Nvidia L4',
  'nvidia-h100-80gb': 'Nvidia H100 80GB',
  'nvidia-h100-mega-80gb': 'Nvidia H100 80GB Plus',
  'nvidia-h200-141gb': 'Nvidia H200 141GB',
  'nvidia-b200': 'Nvidia B200',
};

/** RAM price per GiB = core price / this, where a family's types cannot separate the two (one cores:GiB ratio). */
const CORE_TO_GIB_PRICE_RATIO = 7.5;

function unitPrice(usd: number) {
  const units = Math.floor(usd);
  return { currencyCode: 'USD', units: String(units), nanos: Math.round((usd - units) * 1e9) };
}

/** Per-core and per-GiB prices that reproduce `rows` (least squares; a fixed ratio when degenerate). */
function splitCoreAndRam(rows: readonly { cores: number; gib: number; price: number }[]): {
  core: number;
  ram: number;
} {
  let cc = 0;
  let cg = 0;
  let gg = 0;
  let cp = 0;
  let gp = 0;
  for (const { cores, gib, price } of rows) {
    cc += cores * cores;
    cg += cores * gib;
    gg += gib * gib;
    cp += cores * price;
    gp += gib * price;
  }
  const determinant = cc * gg - cg * cg;
  if (Math.abs(determinant) > 1e-6 * cc * gg) {
    const core = (cp * gg - gp * cg) / determinant;
    const ram = (gp * cc - cp * cg) / determinant;
    if (core > 0 && ram > 0) return { core, ram };
  }
  const first = rows[0] ?? { cores: 1, gib: 0, price: 0 };
  const core = first.price / (first.cores + first.gib / CORE_TO_GIB_PRICE_RATIO);
  return { core, ram: core / CORE_TO_GIB_PRICE_RATIO };
}

export function buildBillingSkus(data: GcpEmulatorData): BillingSku[] {
  const skus: BillingSku[] = [];
  let sequence = 0;
  const add = (
    description: string,
    resourceGroup: string,
    usageType: 'OnDemand' | 'Preemptible',
    region: string,
    usageUnit: string,
    usd: number,
  ) => {
    sequence += 1;
    const skuId = `E${sequence.toString(16).toUpperCase().padStart(3, '0')}-${region.length.toString(16).toUpperCase()}A5C-${(sequence * 7919).toString(16).toUpperCase().padStart(4, '0').slice(-4)}`;
    skus.push({
      name: `services/${COMPUTE_ENGINE_SERVICE_ID}/skus/${skuId}`,
      skuId,
      description: `${usageType === 'Preemptible' ? 'Spot Preemptible ' : ''}${description} running in ${geographyOf(region)}`,
      category: { serviceDisplayName: 'Compute Engine', resourceFamily: 'Compute', resourceGroup, usageType },
      serviceRegions: [region],
      pricingInfo: [
        {
          summary: '',
          pricingExpression: {
            usageUnit,
            displayQuantity: 1,
            tieredRates: [{ startUsageAmount: 0, unitPrice: unitPrice(usd) }],
            usageUnitDescription: usageUnit === 'h' ? 'hour' : 'gibibyte hour',
            baseUnit: 's',
            baseUnitDescription: 'second',
            baseUnitConversionFactor: usageUnit === 'h' ? 3600 : 3865470566400,
          },
          currencyConversionRate: 1,
          effectiveTime: '2026-01-01T00:00:00Z',
        },
      ],
      serviceProviderName: 'Google',
    });
  };

  for (const region of data.regions) {
    // Machine families: the type name's prefix (n1, a2, a3, g2), priced from the VM rows.
    const families = new Map<
      string,
      {
        onDemand: { cores: number; gib: number; price: number }[];
        spot: { cores: number; gib: number; price: number }[];
      }
    >();
    const seen = new Set<string>();
    for (const offering of data.machineOfferings) {
      if (offering.region !== region || seen.has(offering.machineType)) continue;
      seen.add(offering.machineType);
      const spec = data.machineTypes.get(offering.machineType);
      if (!spec) continue;
      const family = offering.machineType.split('-')[0] ?? '';
      const entry = families.get(family) ?? { onDemand: [], spot: [] };
      const shape = { cores: spec.vcpus, gib: spec.memoryMb / 1024 };
      if (offering.onDemandPrice !== undefined)
        entry.onDemand.push({ ...shape, price: offering.onDemandPrice });
      if (offering.spotPrice !== undefined) entry.spot.push({ ...shape, price: offering.spotPrice });
      families.set(family, entry);
    }
    for (const [family, prices] of [...families].sort(([a], [b]) => a.localeCompare(b))) {
      const label = family === 'n1' ? 'N1 Predefined Instance' : `${family.toUpperCase()} Instance`;
      for (const [usageType, rows] of [
        ['OnDemand', prices.onDemand],
        ['Preemptible', prices.spot],
      ] as const) {
        if (rows.length === 0) continue;
        const { core, ram } = splitCoreAndRam(rows);
        add(`${label} Core`, family === 'n1' ? 'N1Standard' : 'CPU', usageType, region, 'h', core);
        add(`${label} Ram`, family === 'n1' ? 'N1Standard' : 'RAM', usageType, region, 'GiBy.h', ram);
      }
    }
    // GPUs: the price of one, from the smallest count the region lists.
    const gpus = new Map<string, { onDemand?: number; spot?: number; count: number }>();
    for (const offering of data.acceleratorOfferings) {
      if (offering.region !== region) continue;
      const known = gpus.get(offering.acceleratorType);
      if (known && known.count <= offering.count) continue;
      gpus.set(offering.acceleratorType, {
        count: offering.count,
        onDemand: offering.onDemandPrice === undefined ? undefined : offering.onDemandPrice / offering.count,
        spot: offering.spotPrice === undefined ? undefined : offering.spotPrice / offering.count,
      });
    }
    for (const [type, price] of [...gpus].sort(([a], [b]) => a.localeCompare(b))) {
      const description = `${GPU_DESCRIPTIONS[type] ?? type} GPU`;
      if (price.onDemand !== undefined) add(description, 'GPU', 'OnDemand', region, 'h', price.onDemand);
      if (price.spot !== undefined) add(description, 'GPU', 'Preemptible', region, 'h', price.spot);
    }
  }
  return skus;
}

/** `GET /v1/services/{service}/skus?pageSize&pageToken&currencyCode`: pages of 5000 at most. */
export function listSkus(skus: readonly BillingSku[], request: EmulatorRequest) {
  const service = request.params.service ?? '';
  if (service !== COMPUTE_ENGINE_SERVICE_ID) {
    throw new GcpApiError(404, 'notFound', `Service not found: services/${service}`);
  }
  const currency = request.query.currencyCode;
  if (currency !== undefined && currency !== 'USD') {
    throw new GcpApiError(
      400,
      'badRequest',
      `Invalid currency code: ${currency} (the emulator prices in USD)`,
    );
  }
  const size = request.query.pageSize === undefined ? 5000 : Number(request.query.pageSize);
  if (!Number.isInteger(size) || size < 0) {
    throw new GcpApiError(400, 'badRequest', `Invalid value for field 'pageSize': ${request.query.pageSize}`);
  }
  const take = Math.min(size === 0 ? 5000 : size, 5000);
  const offset = decodePageToken(request.query.pageToken, 'pageToken');
  const next = offset + take;
  return { skus: skus.slice(offset, next), nextPageToken: next < skus.length ? encodePageToken(next) : '' };
}
