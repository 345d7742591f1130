/**
 * gpuhunt's Azure collector against the emulator's model of the Retail Prices API and Compute's
 * resource SKUs: what it collects is the catalog the emulator publishes, and the bundled
 * `azure.csv` is exactly that.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, checkCatalogIntegrity, formatCatalogCsv } from '@dstack/catalog';
import {
  type AzureEmulator,
  AzureEmulatorData,
  type AzureEmulatorOptions,
  type AzureVmSize,
  DEFAULT_AZURE_VM_SIZES,
  parseRetailPricesFilter,
  retailPrices,
  startAzureEmulator,
} from '@dstack/testing/emulators';
import { afterEach, describe, expect, it } from 'vitest';
import { AzureCatalogProvider } from './azure-catalog-provider.js';
import { azureGpuOf } from './azure-vm-series.js';

let emulator: AzureEmulator | undefined;
afterEach(() => emulator?.close());

async function collector(options: AzureEmulatorOptions = {}) {
  emulator = await startAzureEmulator(options);
  const azure = emulator;
  return new AzureCatalogProvider({
    subscriptionId: azure.subscriptionId,
    tenantId: azure.tenantId,
    creds: {
      type: 'client',
      client_id: azure.servicePrincipal.clientId,
      client_secret: azure.servicePrincipal.clientSecret,
    },
    endpointUrl: azure.url,
    authorityHost: azure.url,
    caCertificates: azure.certificate,
    pricesUrl: azure.retailPricesUrl,
  });
}

describe('AzureCatalogProvider on the Azure emulator', () => {
  it("collects the emulator's published rows over several pages, and the bundled azure.csv is exactly them", async () => {
    const provider = await collector({ retailPricesPageSize: 7 });
    const progress: string[] = [];
    // The API throttles one request (429, Retry-After): it is asked again.
    (emulator as AzureEmulator).server.throttleNext('retail-prices', { count: 1 });

    const items = await provider.collect({ onProgress: (message) => progress.push(message) });

    const published = formatCatalogCsv((emulator as AzureEmulator).data.catalogItems());
    expect(formatCatalogCsv(items)).toBe(published);
    expect(await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'azure.csv'), 'utf8')).toBe(published);
    // gpuhunt's integrity tests of azure.csv (test_azure.py): spot and on-demand, exactly these
    // GPUs, both A100s (its Standard_D2s_v3-in-every-region check needs Azure's 56 regions).
    expect(
      checkCatalogIntegrity(items, {
        spotAndOnDemand: true,
        gpuNames: ['A100', 'A10', 'H100NVL', 'H200', 'T4', 'V100'],
        gpuMemories: { A100: [40, 80] },
      }),
    ).toEqual([]);
    expect(new Set(items.map((item) => item.gpuName).filter(Boolean))).toEqual(
      new Set(['A100', 'A10', 'H100NVL', 'H200', 'T4', 'V100']),
    );
    expect(progress[0]).toBe(`${DEFAULT_AZURE_VM_SIZES.length} VM sizes in 3 regions`);
    expect(progress).toContain('throttled by the Retail Prices API; asking again in 1000 ms');
    expect(items.find((item) => item.instanceName === 'Standard_NV6ads_A10_v5' && !item.spot)).toMatchObject({
      location: 'eastus',
      price: 0.454,
      gpuName: 'A10',
      gpuMemory: 4,
      diskSize: null,
    });
    expect(items.filter((item) => item.instanceName === 'Standard_ND96isr_H200_v5')).toEqual([
      expect.objectContaining({ location: 'eastus2', spot: true }),
      expect.objectContaining({ location: 'eastus2', price: 84.8, spot: false, gpuCount: 8, gpuMemory: 141 }),
    ]);
  });

  it('skips retired sizes, GPUs it cannot name and, unless asked, the series gpuhunt does not publish', async () => {
    const extra: AzureVmSize[] = [
      ['Standard_NC6', 'NC', 6, 56, 1, 'K80', 12],
      ['Standard_NV12s_v3', 'NVSv3', 12, 112, 1, 'M60', null],
      ['Standard_NP10s', 'NP', 10, 168, 1, 'FPGA', null],
      ['Standard_D2as_v5', 'Dasv5', 2, 8, 0, null, null],
    ].map(([name, series, vcpus, memoryGb, gpuCount, gpuName, gpuMemoryGb]) => ({
      name: name as string,
      series: series as string,
      vcpus: vcpus as number,
      memoryGb: memoryGb as number,
      gpuCount: gpuCount as number,
      gpuName: gpuName as string | null,
      gpuMemoryGb: gpuMemoryGb as number | null,
      prices: { eastus: [0.9, 0.1] as const },
    }));
    const provider = await collector({ sizes: [...DEFAULT_AZURE_VM_SIZES.slice(0, 2), ...extra] });
    const progress: string[] = [];

    const everything = await provider.collect({
      applyFilter: false,
      onProgress: (line) => progress.push(line),
    });
    const published = await provider.collect();

    const names = (items: { instanceName: string }[]) =>
      [...new Set(items.map((item) => item.instanceName))].sort();
    expect(names(everything)).toEqual([
      'Standard_D2as_v5',
      'Standard_F2s_v2',
      'Standard_F4s_v2',
      'Standard_NV12s_v3',
    ]);
    expect(progress).toContain('skipped Standard_NP10s: cannot name its GPU');
    expect(names(published)).toEqual(['Standard_F2s_v2', 'Standard_F4s_v2']);
  });
});

describe('the Retail Prices model', () => {
  it("keeps what gpuhunt's filter asks for: Linux pay-as-you-go and spot meters of one region", () => {
    const filter = parseRetailPricesFilter(
      "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and contains(productName, 'Windows') eq false and contains(meterName, 'Low Priority') eq false and armRegionName eq 'eastus'",
    );
    const data = new AzureEmulatorData(
      [DEFAULT_AZURE_VM_SIZES[0] as AzureVmSize],
      [
        { name: 'eastus', displayName: 'US East' },
        { name: 'westeurope', displayName: 'EU West' },
      ],
    );
    const kept = retailPrices(data).filter(filter);
    expect(kept.map((meter) => [meter.meterName, meter.retailPrice])).toEqual([
      ['F2s v2', 0.0846],
      ['F2s v2 Spot', 0.0169],
    ]);
    expect(() => parseRetailPricesFilter("startswith(meterName, 'F')")).toThrow();
  });

  it("names GPUs from the size's series as gpuhunt does", () => {
    for (const size of DEFAULT_AZURE_VM_SIZES) {
      expect(azureGpuOf(size.name)).toEqual(
        size.gpuCount > 0 ? { gpuName: size.gpuName, gpuMemoryGb: size.gpuMemoryGb } : expect.anything(),
      );
    }
    expect(azureGpuOf('Standard_NV12ads_A10_v5')).toEqual({ gpuName: 'A10', gpuMemoryGb: 8 });
    expect(azureGpuOf('Standard_NC8ads_A10_v4')).toEqual({ gpuName: 'A10', gpuMemoryGb: 12 });
  });
});
