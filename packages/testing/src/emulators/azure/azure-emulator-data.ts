/**
 * What the emulated Azure subscription sells: VM sizes of the series dstack supports, with
 * their specifications as Azure's resource SKUs list them (`vCPUs`, `MemoryGB`, `GPUs`), and their
 * Linux pay-as-you-go and spot prices per region (USD per hour, the Retail Prices API's
 * `retailPrice`). The prices are this model's, near Azure's list prices; tests compare offers with
 * each other, never with a figure.
 */
import { type CatalogItem, createCatalogItem } from '@dstack/catalog';

export interface AzureVmSize {
  /** The ARM SKU name, e.g. `Standard_NC4as_T4_v3`. */
  readonly name: string;
  readonly vcpus: number;
  readonly memoryGb: number;
  readonly gpuCount: number;
  /** gpuhunt's GPU name (from the size's series), null without GPUs. */
  readonly gpuName: string | null;
  readonly gpuMemoryGb: number | null;
  /** Pay-as-you-go price in the cheapest region, USD per hour. */
  readonly price: number;
  /** Spot price in the cheapest region; null when the size has no spot meter. */
  readonly spotPrice: number | null;
}

export const DEFAULT_AZURE_VM_SIZES: readonly AzureVmSize[] = [
  {
    name: 'Standard_F2s_v2',
    vcpus: 2,
    memoryGb: 4,
    gpuCount: 0,
    gpuName: null,
    gpuMemoryGb: null,
    price: 0.0846,
    spotPrice: 0.0169,
  },
  {
    name: 'Standard_F4s_v2',
    vcpus: 4,
    memoryGb: 8,
    gpuCount: 0,
    gpuName: null,
    gpuMemoryGb: null,
    price: 0.169,
    spotPrice: 0.0338,
  },
  {
    name: 'Standard_D2s_v6',
    vcpus: 2,
    memoryGb: 8,
    gpuCount: 0,
    gpuName: null,
    gpuMemoryGb: null,
    price: 0.101,
    spotPrice: 0.0202,
  },
  {
    name: 'Standard_NC4as_T4_v3',
    vcpus: 4,
    memoryGb: 28,
    gpuCount: 1,
    gpuName: 'T4',
    gpuMemoryGb: 16,
    price: 0.526,
    spotPrice: 0.0526,
  },
  {
    name: 'Standard_NC8as_T4_v3',
    vcpus: 8,
    memoryGb: 56,
    gpuCount: 1,
    gpuName: 'T4',
    gpuMemoryGb: 16,
    price: 0.752,
    spotPrice: 0.0752,
  },
  {
    name: 'Standard_NC64as_T4_v3',
    vcpus: 64,
    memoryGb: 440,
    gpuCount: 4,
    gpuName: 'T4',
    gpuMemoryGb: 16,
    price: 4.352,
    spotPrice: 0.4352,
  },
  {
    name: 'Standard_NC6s_v3',
    vcpus: 6,
    memoryGb: 112,
    gpuCount: 1,
    gpuName: 'V100',
    gpuMemoryGb: 16,
    price: 3.06,
    spotPrice: 0.306,
  },
  {
    name: 'Standard_NC24ads_A100_v4',
    vcpus: 24,
    memoryGb: 220,
    gpuCount: 1,
    gpuName: 'A100',
    gpuMemoryGb: 80,
    price: 3.673,
    spotPrice: 0.7346,
  },
  {
    name: 'Standard_NC40ads_H100_v5',
    vcpus: 40,
    memoryGb: 320,
    gpuCount: 1,
    gpuName: 'H100NVL',
    gpuMemoryGb: 94,
    price: 6.98,
    spotPrice: 1.396,
  },
];

/** A region and how much dearer than the cheapest its prices are. */
export interface AzureRegion {
  readonly name: string;
  readonly priceFactor: number;
}

export const DEFAULT_AZURE_EMULATOR_REGIONS: readonly AzureRegion[] = [
  { name: 'eastus', priceFactor: 1 },
  { name: 'westeurope', priceFactor: 1.15 },
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

  /**
   * The catalog rows gpuhunt's Azure provider makes of this subscription's SKUs and prices: one
   * per size, region and market, `disk_size` unset, sorted by price.
   */
  catalogItems(): CatalogItem[] {
    const items: CatalogItem[] = [];
    for (const region of this.regions) {
      for (const size of this.sizes) {
        const markets: [number | null, boolean][] = [
          [size.price, false],
          [size.spotPrice, true],
        ];
        for (const [price, spot] of markets) {
          if (price === null) continue;
          items.push(
            createCatalogItem({
              provider: 'azure',
              instanceName: size.name,
              location: region.name,
              price: Math.round(price * region.priceFactor * 10_000) / 10_000,
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
