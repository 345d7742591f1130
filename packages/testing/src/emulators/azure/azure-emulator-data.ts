/**
 * What the emulated Azure subscription sells, the one model its APIs answer from: VM sizes of the
 * series gpuhunt publishes, with their specifications as Compute's resource SKUs list them
 * (`vCPUs`, `MemoryGB`, `GPUs`), the GPU each size has (Azure's size documentation; the SKUs do
 * not say, gpuhunt reads it from the size's name), and their Linux pay-as-you-go and spot prices
 * per region (USD per hour, the Retail Prices API's `retailPrice`). The Retail Prices API
 * (`azure-retail-prices.ts`), the resource SKUs and the catalog the emulator publishes
 * (`catalogItems`) are views of it; the bundled snapshot's `azure.csv` is what gpuhunt's collector
 * makes of it (checked by @dstack/backend-azure's collector test).
 *
 * The pay-as-you-go prices are Azure's list prices in `eastus` as the Retail Prices API gave them
 * (eastus2, where ND H200 v5 is sold, prices the US sizes alike); `westeurope`'s and the spot
 * prices (which Azure changes often) are this model's, near Azure's.
 */
import { type CatalogItem, createCatalogItem } from '@dstack/catalog';
import { AzureArmError } from './azure-arm-error.js';

/** A size's Linux prices in one region: pay-as-you-go, and spot (null: no spot meter there). */
export type AzureSizePrices = readonly [onDemand: number, spot: number | null];

export interface AzureVmSize {
  /** The ARM SKU name, e.g. `Standard_NC4as_T4_v3`. */
  readonly name: string;
  /** The Retail Prices API's series in `productName` (`Virtual Machines {series} Series`). */
  readonly series: string;
  readonly vcpus: number;
  readonly memoryGb: number;
  readonly gpuCount: number;
  /** gpuhunt's name of the size's GPU, null without GPUs. */
  readonly gpuName: string | null;
  /** GB of one GPU as gpuhunt counts it (an A10 v5 size's share of the A10), null without GPUs. */
  readonly gpuMemoryGb: number | null;
  /** Prices by region: the size is sold only in these regions. */
  readonly prices: Readonly<Record<string, AzureSizePrices>>;
}

type SizeSpec = [name: string, series: string, vcpus: number, memoryGb: number];
type GpuSpec = [count: number, name: string, memoryGb: number];

function size(
  [name, series, vcpus, memoryGb]: SizeSpec,
  prices: Record<string, AzureSizePrices>,
  gpu?: GpuSpec,
): AzureVmSize {
  return {
    name,
    series,
    vcpus,
    memoryGb,
    gpuCount: gpu?.[0] ?? 0,
    gpuName: gpu?.[1] ?? null,
    gpuMemoryGb: gpu?.[2] ?? null,
    prices,
  };
}

export const DEFAULT_AZURE_VM_SIZES: readonly AzureVmSize[] = [
  size(['Standard_F2s_v2', 'FSv2', 2, 4], { eastus: [0.0846, 0.0169], westeurope: [0.096, 0.0192] }),
  size(['Standard_F4s_v2', 'FSv2', 4, 8], { eastus: [0.169, 0.0338], westeurope: [0.192, 0.0384] }),
  size(['Standard_F8s_v2', 'FSv2', 8, 16], { eastus: [0.338, 0.0676], westeurope: [0.384, 0.0768] }),
  size(['Standard_D2s_v6', 'Dsv6', 2, 8], { eastus: [0.101, 0.0202], westeurope: [0.118, 0.0236] }),
  size(['Standard_D4s_v6', 'Dsv6', 4, 16], { eastus: [0.202, 0.0404], westeurope: [0.236, 0.0472] }),
  size(['Standard_E2s_v6', 'Esv6', 2, 16], { eastus: [0.132, 0.0264], westeurope: [0.152, 0.0304] }),
  size(['Standard_D2s_v3', 'DSv3', 2, 8], { eastus: [0.096, 0.0192], westeurope: [0.11, 0.022] }),
  size(
    ['Standard_NC4as_T4_v3', 'NCasT4_v3', 4, 28],
    { eastus: [0.526, 0.0526], westeurope: [0.584, 0.0584] },
    [1, 'T4', 16],
  ),
  size(
    ['Standard_NC8as_T4_v3', 'NCasT4_v3', 8, 56],
    { eastus: [0.752, 0.0752], westeurope: [0.835, 0.0835] },
    [1, 'T4', 16],
  ),
  size(
    ['Standard_NC64as_T4_v3', 'NCasT4_v3', 64, 440],
    { eastus: [4.352, 0.4352], westeurope: [4.83, 0.483] },
    [4, 'T4', 16],
  ),
  size(['Standard_NC6s_v3', 'NCSv3', 6, 112], { eastus: [3.06, 0.306], westeurope: [3.305, 0.3305] }, [
    1,
    'V100',
    16,
  ]),
  size(['Standard_NC24s_v3', 'NCSv3', 24, 448], { eastus: [12.24, 1.224], westeurope: [13.22, 1.322] }, [
    4,
    'V100',
    16,
  ]),
  size(
    ['Standard_NV6ads_A10_v5', 'NVadsA10 v5', 6, 55],
    { eastus: [0.454, 0.0908], westeurope: [0.5, 0.1] },
    [1, 'A10', 4],
  ),
  size(
    ['Standard_NV36ads_A10_v5', 'NVadsA10 v5', 36, 440],
    { eastus: [3.2, 0.64], westeurope: [3.52, 0.704] },
    [1, 'A10', 24],
  ),
  size(
    ['Standard_NC24ads_A100_v4', 'NCadsA100v4', 24, 220],
    { eastus: [3.673, 0.7345], westeurope: [4.04, 0.808] },
    [1, 'A100', 80],
  ),
  size(
    ['Standard_NC96ads_A100_v4', 'NCadsA100v4', 96, 880],
    { eastus: [14.692, 2.938], westeurope: [16.16, 3.232] },
    [4, 'A100', 80],
  ),
  size(
    ['Standard_NC40ads_H100_v5', 'NCadsH100v5', 40, 320],
    { eastus: [6.98, 1.396], westeurope: [7.68, 1.536] },
    [1, 'H100NVL', 94],
  ),
  size(
    ['Standard_NC80adis_H100_v5', 'NCadsH100v5', 80, 640],
    { eastus: [13.96, 2.792], westeurope: [15.36, 3.072] },
    [2, 'H100NVL', 94],
  ),
  size(['Standard_ND40rs_v2', 'NDv2', 40, 672], { eastus: [22.032, 4.406] }, [8, 'V100', 32]),
  size(['Standard_ND96asr_v4', 'NDasrA100v4', 96, 900], { eastus: [27.197, 5.439] }, [8, 'A100', 40]),
  size(
    ['Standard_ND96amsr_A100_v4', 'NDamsrA100v4', 96, 1900],
    { eastus: [32.77, 6.554], westeurope: [36.05, 7.21] },
    [8, 'A100', 80],
  ),
  size(['Standard_ND96isr_H200_v5', 'NDisrH200v5', 96, 1850], { eastus2: [84.8, 16.96] }, [8, 'H200', 141]),
];

/** A region: its ARM name and the display name the Retail Prices API's `location` gives. */
export interface AzureRegion {
  readonly name: string;
  readonly displayName: string;
}

export const DEFAULT_AZURE_EMULATOR_REGIONS: readonly AzureRegion[] = [
  { name: 'eastus', displayName: 'US East' },
  { name: 'eastus2', displayName: 'US East 2' },
  { name: 'westeurope', displayName: 'EU West' },
];

/** The sizes and regions of one emulated subscription. */
export class AzureEmulatorData {
  constructor(
    readonly sizes: readonly AzureVmSize[] = DEFAULT_AZURE_VM_SIZES,
    readonly regions: readonly AzureRegion[] = DEFAULT_AZURE_EMULATOR_REGIONS,
  ) {}

  size(name: string): AzureVmSize | undefined {
    return this.sizes.find((size) => size.name.toLowerCase() === name.toLowerCase());
  }

  region(name: string): AzureRegion | undefined {
    return this.regions.find((region) => region.name === name.toLowerCase());
  }

  /** The body's `location`, lower-cased; ARM's 400 when the subscription has no such region. */
  requireLocation(location: unknown, resourceType: string): string {
    const name = typeof location === 'string' ? location.toLowerCase() : '';
    if (!this.region(name)) {
      throw new AzureArmError(
        400,
        'LocationNotAvailableForResourceType',
        `The provided location '${name}' is not available for resource type '${resourceType}'.`,
      );
    }
    return name;
  }

  /** The sizes sold in `region`, in the model's order. */
  sizesIn(region: string): AzureVmSize[] {
    return this.sizes.filter((size) => size.prices[region.toLowerCase()] !== undefined);
  }

  /**
   * The catalog rows gpuhunt publishes of this subscription: one per size, region and market
   * (regions by name, each size's pay-as-you-go row then its spot row), `disk_size` unset, then
   * sorted by price keeping that order among equal prices.
   */
  catalogItems(): CatalogItem[] {
    const items: CatalogItem[] = [];
    const regions = [...this.regions].sort((a, b) => a.name.localeCompare(b.name));
    for (const region of regions) {
      for (const size of this.sizesIn(region.name)) {
        const [onDemand, spotPrice] = size.prices[region.name] as AzureSizePrices;
        const markets: [number | null, boolean][] = [
          [onDemand, false],
          [spotPrice, true],
        ];
        for (const [price, spot] of markets) {
          if (price === null) continue;
          items.push(
            createCatalogItem({
              provider: 'azure',
              instanceName: size.name,
              location: region.name,
              price,
              cpu: size.vcpus,
              memory: size.memoryGb,
              gpuCount: size.gpuCount,
              gpuName: size.gpuName,
              gpuMemory: size.gpuMemoryGb,
              gpuVendor: size.gpuCount > 0 ? 'nvidia' : null,
              spot,
            }),
          );
        }
      }
    }
    return items.sort((a, b) => a.price - b.price);
  }
}
