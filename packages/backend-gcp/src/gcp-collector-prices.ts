/**
 * Compute Engine prices from the Cloud Billing Catalog, read as gpuhunt's `Prices` reads them:
 * per (region, capacity) a price per vCPU and per GiB of each machine family, per GPU of each
 * accelerator type, per GPU "slice" (A4 B200, sold whole only as spot or DWS calendar mode), and
 * per GiB-hour of local SSD. A machine type's price is the sum of its parts; a missing part means
 * no offer for that capacity.
 */
import { z } from 'zod';
import type { GcpMachineType } from './gcp-collector-machine-types.js';
import { regionOfZone } from './gcp-offers.js';
import { type GcpRestSettings, joinUrl, listAllPages } from './gcp-rest.js';

/** The Billing Catalog's service id of Compute Engine (gpuhunt's `compute_service`). */
export const COMPUTE_ENGINE_SERVICE_ID = '6F81-5844-456A';

/** The ways GCP sells a machine; gpuhunt makes one offer per capacity it finds every price part for. */
export const GCP_CAPACITY_TYPES = ['on-demand', 'spot', 'dws-calendar-mode'] as const;
export type GcpCapacityType = (typeof GCP_CAPACITY_TYPES)[number];

/** GCP bills local SSD per GiB-month of 730 hours. */
const HOURS_IN_MONTH = 730;

/** Descriptions gpuhunt skips: prices that are not a plain VM's. */
const SKIPPED_DESCRIPTION_WORDS = ['Sole Tenancy', 'Reserved', 'Premium', 'Custom', 'suspended'];

/** Families whose SKU name is not `<letter><digit>[x] …` (gpuhunt's table). */
const NAMED_FAMILIES: Readonly<Record<string, string>> = {
  'Memory-optimized Instance': 'm1',
  'Compute optimized Instance': 'c2',
  'Compute optimized': 'c2',
  'A3Plus Instance': 'a3-megagpu',
};

/** GPU SKU names whose dashed form is not Compute's accelerator type. */
const GPU_FAMILY_ALIASES: Readonly<Record<string, string>> = {
  'nvidia-tesla-a100-80gb': 'nvidia-a100-80gb',
  'nvidia-h100-80gb-mega': 'nvidia-h100-mega-80gb',
  'nvidia-h100-80gb-plus': 'nvidia-h100-mega-80gb',
};

/** VM families whose price needs a longer prefix than the first `-` token. */
const MULTI_TOKEN_VM_FAMILIES = ['a3-megagpu'];

/** Shared-core and reservation-only families gpuhunt does not price. */
const UNPRICED_VM_FAMILIES = ['g1', 'f1', 'm2'];

/** Local SSD (GiB) that comes with these machine types and is billed with them. */
export const GCP_LOCAL_SSD_SIZES_GIB: Readonly<Record<string, number>> = {
  'c3-standard-4-lssd': 1 * 375,
  'c3-standard-8-lssd': 2 * 375,
  'c3-standard-22-lssd': 4 * 375,
  'c3-standard-44-lssd': 8 * 375,
  'c3-standard-88-lssd': 16 * 375,
  'c3-standard-176-lssd': 32 * 375,
  'c3d-standard-8-lssd': 1 * 375,
  'c3d-standard-16-lssd': 1 * 375,
  'c3d-standard-30-lssd': 2 * 375,
  'c3d-standard-60-lssd': 4 * 375,
  'c3d-standard-90-lssd': 8 * 375,
  'c3d-standard-180-lssd': 16 * 375,
  'c3d-standard-360-lssd': 32 * 375,
  'c3d-highmem-8-lssd': 1 * 375,
  'c3d-highmem-16-lssd': 1 * 375,
  'c3d-highmem-30-lssd': 2 * 375,
  'c3d-highmem-60-lssd': 4 * 375,
  'c3d-highmem-90-lssd': 8 * 375,
  'c3d-highmem-180-lssd': 16 * 375,
  'c3d-highmem-360-lssd': 32 * 375,
  'a3-megagpu-8g': 16 * 375,
  'a3-highgpu-8g': 16 * 375,
  'a2-ultragpu-1g': 1 * 375,
  'a2-ultragpu-2g': 2 * 375,
  'a2-ultragpu-4g': 4 * 375,
  'a2-ultragpu-8g': 8 * 375,
  'z3-standard-88-lssd': 12 * 3000,
  'z3-standard-176-lssd': 12 * 3000,
};

const SkuSchema = z.object({
  description: z.string(),
  category: z.object({
    resourceFamily: z.string().default(''),
    usageType: z.string().default(''),
  }),
  serviceRegions: z.array(z.string()).default([]),
  pricingInfo: z
    .array(
      z.object({
        pricingExpression: z.object({
          tieredRates: z
            .array(
              z.object({
                unitPrice: z.object({
                  // int64 as a JSON string; absent when zero (proto3 JSON).
                  units: z.union([z.string(), z.number()]).default('0'),
                  nanos: z.number().default(0),
                }),
              }),
            )
            .min(1),
        }),
      }),
    )
    .min(1),
});
export type GcpBillingSku = z.output<typeof SkuSchema>;

type PricesByRegionAndCapacity = Map<string, number>;
const key = (region: string, capacity: GcpCapacityType) => `${region}\u0000${capacity}`;

/** The first tier's unit price, as gpuhunt reads it (the schema guarantees a first tier). */
function skuPrice(sku: GcpBillingSku): number {
  const { units, nanos } = sku.pricingInfo[0]!.pricingExpression.tieredRates[0]!.unitPrice;
  return Number(units) + nanos / 1e9;
}

function capacityOf(sku: GcpBillingSku): GcpCapacityType {
  if (sku.category.usageType === 'Preemptible') return 'spot';
  if (sku.description.includes('DWS Calendar Mode')) return 'dws-calendar-mode';
  return 'on-demand';
}

/** The family of a machine type as its price parts are keyed: `n1`, `a2`, `a3-megagpu`. */
export function vmFamilyOf(instanceName: string): string {
  return (
    MULTI_TOKEN_VM_FAMILIES.find((family) => instanceName.startsWith(family)) ?? instanceName.split('-')[0]!
  );
}

/** Prices per (region, capacity) of each family, GPU, B200 slice and local SSD, read from SKUs. */
export class GcpPrices {
  readonly #core = new Map<string, PricesByRegionAndCapacity>();
  readonly #ram = new Map<string, PricesByRegionAndCapacity>();
  readonly #gpu = new Map<string, PricesByRegionAndCapacity>();
  readonly #gpuSlice = new Map<string, PricesByRegionAndCapacity>();
  readonly #localSsd: PricesByRegionAndCapacity = new Map();

  /** Reads `skus` (items of `services.skus.list`); `what` names them in a parse error. */
  static fromSkus(skus: readonly unknown[], what = 'skus'): GcpPrices {
    const prices = new GcpPrices();
    skus.forEach((raw, index) => {
      const parsed = SkuSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0] as z.core.$ZodIssue;
        throw new Error(`${what}[${index}].${issue.path.join('.')}: ${issue.message}`);
      }
      prices.add(parsed.data);
    });
    return prices;
  }

  add(sku: GcpBillingSku): void {
    if (sku.category.usageType !== 'OnDemand' && sku.category.usageType !== 'Preemptible') return;
    if (SKIPPED_DESCRIPTION_WORDS.some((word) => sku.description.includes(word))) return;
    if (sku.category.resourceFamily === 'Compute') this.#addCompute(sku);
    else if (sku.category.resourceFamily === 'Storage') this.#addStorage(sku);
  }

  #addCompute(sku: GcpBillingSku): void {
    if (sku.description.includes('(1 gpu slice)')) {
      // Only A4's B200 is sold by the slice (spot and DWS calendar mode).
      if (
        sku.description.startsWith('Spot Preemptible A4 Nvidia B200') ||
        sku.description.startsWith('DWS Calendar Mode A4 Nvidia B200')
      ) {
        this.#put(this.#gpuSlice, 'nvidia-b200', sku);
      }
      return;
    }
    let family: string;
    let resource: string;
    if (sku.description.includes('RTX 6000 96GB')) {
      family = 'nvidia-rtx-pro-6000';
      resource = 'gpu';
    } else {
      // Greedy: the last " gpu"/" ram"/" core" ends the family ("N1 Predefined Instance Core …").
      const match = /^(?:spot preemptible )?(.+) (gpu|ram|core)/i.exec(sku.description);
      if (!match) return;
      family = match[1] as string;
      resource = (match[2] as string).toLowerCase();
    }
    if (resource === 'gpu') {
      const dashed = family.replaceAll(' ', '-').toLowerCase();
      family = GPU_FAMILY_ALIASES[dashed] ?? dashed;
      this.#put(this.#gpu, family, sku);
      return;
    }
    const short = /^([a-z]\d.?) /.exec(family.toLowerCase());
    family = short ? (short[1] as string) : (NAMED_FAMILIES[family] ?? family);
    this.#put(resource === 'core' ? this.#core : this.#ram, family, sku);
  }

  #addStorage(sku: GcpBillingSku): void {
    if (!sku.description.toLowerCase().startsWith('ssd backed local storage')) return;
    for (const region of sku.serviceRegions) {
      this.#localSsd.set(key(region, capacityOf(sku)), skuPrice(sku) / HOURS_IN_MONTH);
    }
  }

  #put(table: Map<string, PricesByRegionAndCapacity>, family: string, sku: GcpBillingSku): void {
    const prices = table.get(family) ?? new Map<string, number>();
    for (const region of sku.serviceRegions) prices.set(key(region, capacityOf(sku)), skuPrice(sku));
    table.set(family, prices);
  }

  /**
   * The hourly price of `machineType` in its zone's region for `capacity`, unrounded; null when a
   * part is not priced there (no offer).
   */
  instancePrice(machineType: GcpMachineType, capacity: GcpCapacityType): number | null {
    const family = vmFamilyOf(machineType.instanceName);
    if (UNPRICED_VM_FAMILIES.includes(family)) return null;
    const at = key(regionOfZone(machineType.zone), capacity);
    const accelerator = machineType.acceleratorType;

    const slice = accelerator === null ? undefined : this.#gpuSlice.get(accelerator)?.get(at);
    if (slice !== undefined) return machineType.gpuCount * slice;

    const core = this.#core.get(family)?.get(at);
    const ram = this.#ram.get(family)?.get(at);
    if (core === undefined || ram === undefined) return null;
    let price = machineType.cpu * core + machineType.memory * ram;
    if (accelerator !== null) {
      const gpu = this.#gpu.get(accelerator)?.get(at);
      if (gpu === undefined) return null;
      price += machineType.gpuCount * gpu;
    }
    const localSsdGib = GCP_LOCAL_SSD_SIZES_GIB[machineType.instanceName];
    if (localSsdGib !== undefined) {
      // gpuhunt fails on a missing local SSD price; here it is a missing part like any other.
      const localSsd = this.#localSsd.get(at);
      if (localSsd === undefined) return null;
      price += localSsdGib * localSsd;
    }
    return price;
  }
}

export interface GcpBillingSettings extends GcpRestSettings {
  /** The Cloud Billing base URL, e.g. `https://cloudbilling.googleapis.com`. */
  readonly billingUrl: string;
}

/** Every Compute Engine SKU priced in USD (`services/6F81-5844-456A/skus`, pages of 5000). */
export async function listComputeEngineSkus(settings: GcpBillingSettings): Promise<unknown[]> {
  const url = joinUrl(settings.billingUrl, `/v1/services/${COMPUTE_ENGINE_SERVICE_ID}/skus`);
  url.searchParams.set('currencyCode', 'USD');
  return listAllPages(url, { itemsKey: 'skus', pageSize: ['pageSize', 5000] }, settings);
}
