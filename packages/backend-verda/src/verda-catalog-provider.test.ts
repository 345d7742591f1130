import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, formatCatalogCsv } from '@dstack/catalog';
import { startVerdaEmulator } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { VerdaCatalogProvider, verdaGpuName } from './verda-catalog-provider.js';

describe('verdaGpuName (gpuhunt get_gpu_name)', () => {
  it('names the GPUs of whole descriptions only', () => {
    expect(verdaGpuName('8x H100 SXM5 80GB')).toBe('H100');
    expect(verdaGpuName('1x RTX 6000 Ada 48GB')).toBe('RTX6000Ada');
    expect(verdaGpuName('1x Tesla V100 16GB')).toBe('V100');
    expect(verdaGpuName('1x H100 SXM5 80GB extra')).toBeNull();
  });
});

describe('VerdaCatalogProvider on the Verda emulator', () => {
  it("collects gpuhunt's rows (spot and on-demand, AMD left out), and the bundled verda.csv is exactly them", async () => {
    const emulator = await startVerdaEmulator();
    try {
      const provider = new VerdaCatalogProvider({
        clientId: emulator.client.clientId,
        clientSecret: emulator.client.clientSecret,
        endpointUrl: emulator.apiUrl,
      });
      const items = await provider.collect();
      expect(items.some((item) => item.gpuName === 'RX7900XTX')).toBe(false);
      expect(
        (await provider.collect({ applyFilter: false })).some((item) => item.gpuName === 'RX7900XTX'),
      ).toBe(true);
      expect(items.find((item) => item.instanceName === '8H100.80S.176V' && !item.spot)).toMatchObject({
        price: 17.52,
        gpuCount: 8,
        gpuMemory: 80,
        diskSize: null,
      });
      const bundled = await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'verda.csv'), 'utf8');
      expect(formatCatalogCsv(items)).toBe(bundled);
    } finally {
      await emulator.close();
    }
  });
});
