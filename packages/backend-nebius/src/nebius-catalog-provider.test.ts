import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, formatCatalogCsv } from '@dstack/catalog';
import { startNebiusEmulator } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { NebiusCatalogProvider, nebiusPlatformGpu } from './nebius-catalog-provider.js';

const platform = (name: string, gpuMemory: number) => ({
  metadata: { id: name, parent_id: 'p', name },
  spec: { presets: [], gpu_memory_gigabytes: gpuMemory },
  status: null,
});

describe('nebiusPlatformGpu (gpuhunt get_gpu_info)', () => {
  it('names the GPU of a platform ID when its memory matches a known GPU', () => {
    expect(nebiusPlatformGpu(platform('gpu-h100-sxm', 80))).toEqual({ name: 'H100', memory: 80 });
    expect(nebiusPlatformGpu(platform('gpu-rtx6000', 96))).toEqual({ name: 'RTXPRO6000', memory: 96 });
    expect(nebiusPlatformGpu(platform('gpu-h100-sxm', 94))).toBeNull();
    expect(nebiusPlatformGpu(platform('cpu-d3', 0))).toBeNull();
  });
});

describe('NebiusCatalogProvider on the Nebius emulator', () => {
  it("collects gpuhunt's rows (calculator prices, spot where allowed, fabrics), and the bundled nebius.csv is exactly them", async () => {
    const emulator = await startNebiusEmulator();
    try {
      const items = await new NebiusCatalogProvider({
        serviceAccountId: emulator.serviceAccount.serviceAccountId,
        publicKeyId: emulator.serviceAccount.publicKeyId,
        privateKey: emulator.serviceAccount.privateKey,
        endpointUrl: emulator.apiUrl,
      }).collect();
      expect(items.map((item) => item.price)).toEqual(
        [...items.map((item) => item.price)].sort((a, b) => a - b),
      );
      expect(
        items.find(
          (item) =>
            item.instanceName === 'gpu-h100-sxm 8gpu-128vcpu-1600gb' &&
            item.location === 'eu-north1' &&
            !item.spot,
        ),
      ).toMatchObject({
        price: 23.6,
        cpu: 128,
        memory: 1600,
        gpuCount: 8,
        gpuName: 'H100',
        gpuMemory: 80,
        providerData: { fabrics: ['fabric-2', 'fabric-3', 'fabric-4', 'fabric-6'] },
      });
      // L40S allows no preemptibles in the emulated tenancy: on-demand rows only.
      expect(items.some((item) => item.gpuName === 'L40S' && item.spot)).toBe(false);
      const bundled = await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'nebius.csv'), 'utf8');
      expect(formatCatalogCsv(items)).toBe(bundled);
    } finally {
      await emulator.close();
    }
  });
});
