import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, formatCatalogCsv } from '@dstack/catalog';
import { startLambdaEmulator } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { LambdaCatalogProvider, parseLambdaDescription } from './lambda-catalog-provider.js';

describe('parseLambdaDescription (gpuhunt _parse_description)', () => {
  it('reads the count, the name without spaces or Tesla, and the memory', () => {
    expect(parseLambdaDescription('1x A10 (24 GB PCIe)')).toEqual({ count: 1, name: 'A10', memoryGb: 24 });
    expect(parseLambdaDescription('8x Tesla V100 (16 GB)')).toEqual({ count: 8, name: 'V100', memoryGb: 16 });
    expect(parseLambdaDescription('2x RTX A6000 (48 GB)')).toEqual({
      count: 2,
      name: 'RTXA6000',
      memoryGb: 48,
    });
    expect(parseLambdaDescription('4x vCPU (16 GiB RAM)')).toBeNull();
  });
});

describe('LambdaCatalogProvider on the Lambda emulator', () => {
  it("collects gpuhunt's rows, and the bundled lambdalabs.csv is exactly what it collects there", async () => {
    const emulator = await startLambdaEmulator();
    try {
      const items = await new LambdaCatalogProvider({
        apiKey: emulator.apiKey,
        endpointUrl: emulator.apiUrl,
      }).collect();
      expect(new Set(items.map((item) => item.location))).toEqual(new Set(emulator.regions));
      expect(items.every((item, index) => index === 0 || (items[index - 1]?.price ?? 0) <= item.price)).toBe(
        true,
      );
      expect(items.find((item) => item.instanceName === 'gpu_1x_gh200')).toMatchObject({
        cpuArch: 'arm',
        flags: ['lambda-arm'],
        spot: false,
      });
      expect(items.find((item) => item.instanceName === 'gpu_1x_a10')).toMatchObject({
        price: 0.75,
        memory: 200 * 1.074,
        diskSize: 1400 * 1.074,
        gpuName: 'A10',
        gpuMemory: 24,
      });
      const bundled = await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'lambdalabs.csv'), 'utf8');
      expect(formatCatalogCsv(items)).toBe(bundled);
    } finally {
      await emulator.close();
    }
  });

  it('needs a key', async () => {
    const previous = process.env.LAMBDALABS_TOKEN;
    delete process.env.LAMBDALABS_TOKEN;
    try {
      await expect(new LambdaCatalogProvider().collect()).rejects.toThrow(/LAMBDALABS_TOKEN/);
    } finally {
      if (previous !== undefined) process.env.LAMBDALABS_TOKEN = previous;
    }
  });
});
