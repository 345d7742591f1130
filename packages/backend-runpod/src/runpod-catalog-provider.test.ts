/**
 * gpuhunt's RunPod collector against the emulator: the rows it collects are the ones the
 * emulator's gpuhunt bucket publishes (so a server planning from the bucket sees what
 * `dstack-catalog collect runpod` would write), with gpuhunt's names, prices and flags.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, formatCatalogCsv } from '@dstack/catalog';
import { startRunpodEmulator } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { cpuSizeLadder, RunpodCatalogProvider } from './runpod-catalog-provider.js';
import { runpodGpuName } from './runpod-gpu-names.js';

describe('RunpodCatalogProvider', () => {
  it("collects, without a key, the rows the emulator's gpuhunt bucket publishes (the bundled runpod.csv)", async () => {
    const emulator = await startRunpodEmulator();
    try {
      const items = await new RunpodCatalogProvider({ endpointUrl: emulator.graphqlUrl }).collect();

      expect(formatCatalogCsv(items)).toBe(formatCatalogCsv(emulator.catalogItems));
      expect(await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'runpod.csv'), 'utf8')).toBe(
        formatCatalogCsv(items),
      );
      const prices = items.map((item) => item.price);
      expect(prices).toEqual([...prices].sort((left, right) => left - right));
      const rtx4090 = items.find(
        (item) => item.gpuName === 'RTX4090' && item.location === 'US-TX-3' && item.gpuCount === 2,
      );
      expect(rtx4090).toMatchObject({
        instanceName: 'NVIDIA GeForce RTX 4090',
        price: 1.38,
        cpu: 12,
        memory: 82,
        spot: false,
      });
      expect(items.some((item) => item.location === 'US' && item.gpuName === 'RTX4090')).toBe(true);
      expect(items.filter((item) => item.flags.includes('runpod-cluster'))).toEqual([
        expect.objectContaining({
          gpuName: 'H100',
          gpuCount: 8,
          location: 'US-TX-3',
          providerData: { pod_counts: [2, 3, 4, 5, 6, 7, 8] },
        }),
      ]);
      expect(items.find((item) => item.instanceName === 'cpu3c-4-8')).toMatchObject({
        cpu: 4,
        memory: 8,
        diskSize: 40,
        price: 0.12,
      });
      // The unlisted data center is never asked.
      expect(items.some((item) => item.location === 'US-DE-1')).toBe(false);
    } finally {
      await emulator.close();
    }
  });

  it("maps RunPod's GPU names as gpuhunt does", () => {
    expect(runpodGpuName('nvidia', 'RTX 4090')).toBe('RTX4090');
    expect(runpodGpuName('nvidia', 'RTX A6000')).toBe('A6000');
    expect(runpodGpuName('nvidia', 'RTX 6000 Ada')).toBe('RTX6000Ada');
    expect(runpodGpuName('nvidia', 'A100 SXM')).toBe('A100');
    expect(runpodGpuName('nvidia', 'H100 NVL')).toBe('H100NVL');
    expect(runpodGpuName('nvidia', 'H200 NVL')).toBe('H200NVL');
    expect(runpodGpuName('nvidia', 'Tesla V100')).toBe('V100');
    expect(runpodGpuName('nvidia', 'B200')).toBe('B200');
    expect(runpodGpuName('nvidia', 'Quadro P5000')).toBeNull();
    expect(runpodGpuName('amd', 'MI300X')).toBe('MI300X');
  });

  it("sizes CPU flavors by gpuhunt's ladder", () => {
    expect(cpuSizeLadder(2, 32)).toEqual([2, 4, 8, 16, 32]);
    expect(cpuSizeLadder(3, 20)).toEqual([3, 6, 12, 20]);
  });
});
