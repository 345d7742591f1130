/**
 * The Cloud Billing Catalog's Compute Engine SKUs (`GET /v1/services/6F81-5844-456A/skus`), as
 * gpuhunt's GCP collector reads them: per region, a core and a RAM SKU per machine family
 * ("N1 Predefined Instance Core running in Americas") and a SKU per GPU ("Nvidia Tesla T4 GPU
 * running in Americas"), OnDemand and Preemptible (spot), priced so that cores·core + GiB·ram
 * (+ GPUs·gpu, + local SSD·ssd) gives back the catalog's prices. Derived from the same data as the
 * machine types. a3-megagpu is its own family ("A3Plus Instance"), as in the real catalog; types
 * that come with local SSD (a2-ultragpu, a3-highgpu-8g, a3-megagpu-8g) pay for it at the region's
 * "SSD backed Local Storage" price (per GiB-month of 730 hours), so their core and RAM fit the rest.
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

/** The local SSD (GiB) that comes with, and is billed with, these machine types (Compute's fixed sizes). */
export const BUNDLED_LOCAL_SSD_GIB: Readonly<Record<string, number>> = {
  'a2-ultragpu-1g': 375,
  'a2-ultragpu-2g': 2 * 375,
  'a2-ultragpu-4g': 4 * 375,
  'a2-ultragpu-8g': 8 * 375,
  'a3-highgpu-8g': 16 * 375,
  'a3-megagpu-8g': 16 * 375,
};

/** USD per GiB-month of local SSD, on-demand and spot, in every region (GCP's order of magnitude). */
const LOCAL_SSD_MONTHLY_PRICE = { onDemand: 0.08, spot: 0.064 };
const HOURS_IN_MONTH = 730;

/** The family a machine type's core and RAM SKUs are named after. */
function familyOf(machineType: string): string {
  return machineType.startsWith('a3-megagpu') ? 'a3-megagpu' : (machineType.split('-')[0] ?? '');
}

/** The SKU description's name of a family: "N1 Predefined Instance", "A3Plus Instance", "G2 Instance". */
function familyLabel(family: string): string {
  if (family === 'n1') return 'N1 Predefined Instance';
  if (family === 'a3-megagpu') return 'A3Plus Instance';
  return `${family.toUpperCase()} Instance`;
}

/** RAM price per GiB = core price / this, where a family's types cannot separate the two (one cores:GiB ratio). */
const CORE_TO_GIB_PRICE_RATIO = 7.5;

/** How the Billing Catalog describes each usage unit (base unit: seconds, byte-seconds). */
const USAGE_UNITS = {
  h: { description: 'hour', baseUnit: 's', baseUnitDescription: 'second', conversionFactor: 3600 },
  'GiBy.h': {
    description: 'gibibyte hour',
    baseUnit: 'By.s',
    baseUnitDescription: 'byte second',
    conversionFactor: 3865470566400,
  },
  'GiBy.mo': {
    description: 'gibibyte month',
    baseUnit: 'By.s',
    baseUnitDescription: 'byte second',
    conversionFactor: 2821793513472000,
  },
} as const;

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
  const push = (
    description: string,
    category: Pick<BillingSku['category'], 'resourceFamily' | 'resourceGroup' | 'usageType'>,
    region: string,
    usageUnit: 'h' | 'GiBy.h' | 'GiBy.mo',
    usd: number,
  ) => {
    sequence += 1;
    const skuId = `E${sequence.toString(16).toUpperCase().padStart(3, '0')}-${region.length.toString(16).toUpperCase()}A5C-${(sequence * 7919).toString(16).toUpperCase().padStart(4, '0').slice(-4)}`;
    skus.push({
      name: `services/${COMPUTE_ENGINE_SERVICE_ID}/skus/${skuId}`,
      skuId,
      description,
      category: { serviceDisplayName: 'Compute Engine', ...category },
      serviceRegions: [region],
      pricingInfo: [
        {
          summary: '',
          pricingExpression: {
            usageUnit,
            displayQuantity: 1,
            tieredRates: [{ startUsageAmount: 0, unitPrice: unitPrice(usd) }],
            usageUnitDescription: USAGE_UNITS[usageUnit].description,
            baseUnit: USAGE_UNITS[usageUnit].baseUnit,
            baseUnitDescription: USAGE_UNITS[usageUnit].baseUnitDescription,
            baseUnitConversionFactor: USAGE_UNITS[usageUnit].conversionFactor,
          },
          currencyConversionRate: 1,
          effectiveTime: '2026-01-01T00:00:00Z',
        },
      ],
      serviceProviderName: 'Google',
    });
  };
  /** A Compute SKU: "[Spot Preemptible ]<what> running in <geography>". */
  const add = (
    description: string,
    resourceGroup: string,
    usageType: 'OnDemand' | 'Preemptible',
    region: string,
    usageUnit: 'h' | 'GiBy.h',
    usd: number,
  ) =>
    push(
      `${usageType === 'Preemptible' ? 'Spot Preemptible ' : ''}${description} running in ${geographyOf(region)}`,
      { resourceFamily: 'Compute', resourceGroup, usageType },
      region,
      usageUnit,
      usd,
    );
  /** A local SSD SKU, priced per GiB-month. */
  const addStorage = (
    description: string,
    usageType: 'OnDemand' | 'Preemptible',
    region: string,
    usd: number,
  ) =>
    push(
      description,
      { resourceFamily: 'Storage', resourceGroup: 'LocalSSD', usageType },
      region,
      'GiBy.mo',
      usd,
    );

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
    let hasLocalSsd = false;
    for (const offering of data.machineOfferings) {
      if (offering.region !== region || seen.has(offering.machineType)) continue;
      seen.add(offering.machineType);
      const spec = data.machineTypes.get(offering.machineType);
      if (!spec) continue;
      const family = familyOf(offering.machineType);
      const entry = families.get(family) ?? { onDemand: [], spot: [] };
      const shape = { cores: spec.vcpus, gib: spec.memoryMb / 1024 };
      const ssdGib = BUNDLED_LOCAL_SSD_GIB[offering.machineType] ?? 0;
      hasLocalSsd ||= ssdGib > 0;
      const ssdPart = (monthly: number) => (ssdGib * monthly) / HOURS_IN_MONTH;
      if (offering.onDemandPrice !== undefined)
        entry.onDemand.push({
          ...shape,
          price: offering.onDemandPrice - ssdPart(LOCAL_SSD_MONTHLY_PRICE.onDemand),
        });
      if (offering.spotPrice !== undefined)
        entry.spot.push({ ...shape, price: offering.spotPrice - ssdPart(LOCAL_SSD_MONTHLY_PRICE.spot) });
      families.set(family, entry);
    }
    if (hasLocalSsd) {
      addStorage('SSD backed Local Storage', 'OnDemand', region, LOCAL_SSD_MONTHLY_PRICE.onDemand);
      addStorage(
        'SSD backed Local Storage attached to Spot Preemptible VMs',
        'Preemptible',
        region,
        LOCAL_SSD_MONTHLY_PRICE.spot,
      );
    }
    for (const [family, prices] of [...families].sort(([a], [b]) => a.localeCompare(b))) {
      const label = familyLabel(family);
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
