import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUNDLED_SNAPSHOT_DIRECTORY, formatCatalogCsv } from '@dstack/catalog';
import { startOciEmulator } from '@dstack/testing/emulators';
import { describe, expect, it } from 'vitest';
import { OciCatalogProvider, ociShapeGpuName } from './oci-catalog-provider.js';

describe('ociShapeGpuName (gpuhunt get_gpu_name)', () => {
  it('names the GPU of a shape', () => {
    expect(ociShapeGpuName('BM.GPU4.8')).toBe('A100');
    expect(ociShapeGpuName('VM.GPU3.1')).toBe('V100');
    expect(ociShapeGpuName('VM.GPU.A10.1')).toBe('A10');
    expect(ociShapeGpuName('VM.Standard2.4')).toBeNull();
  });
});

describe('OciCatalogProvider on the OCI emulator', () => {
  it("collects gpuhunt's rows (Cost Estimator prices, half-price spot where preemptible), and the bundled oci.csv is exactly them", async () => {
    const emulator = await startOciEmulator();
    try {
      const items = await new OciCatalogProvider({
        creds: {
          user: emulator.user.user,
          tenancy: emulator.user.tenancy,
          key_content: emulator.user.privateKey,
          fingerprint: emulator.user.fingerprint,
          region: emulator.user.region,
        },
        endpointUrl: emulator.url,
        costEstimatorUrl: emulator.costEstimatorUrl,
      }).collect();
      expect(items.map((item) => item.price)).toEqual(
        [...items.map((item) => item.price)].sort((a, b) => a - b),
      );
      expect(
        items.find((item) => item.instanceName === 'VM.GPU.A10.1' && item.location === 'us-ashburn-1'),
      ).toMatchObject({
        price: 2,
        cpu: 30,
        memory: 240,
        gpuCount: 1,
        gpuName: 'A10',
        gpuMemory: 24,
        spot: false,
      });
      expect(items.find((item) => item.instanceName === 'VM.GPU3.1' && item.spot)).toMatchObject({
        price: 1.475,
        flags: ['oci-spot'],
      });
      // Hidden and Ampere A1 shapes are not collected; A10 allows no preemptible instances.
      expect(
        items.some((item) => item.instanceName === 'VM.Standard1.2' || item.instanceName.includes('.A1.')),
      ).toBe(false);
      expect(items.some((item) => item.gpuName === 'A10' && item.spot)).toBe(false);
      const bundled = await readFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'oci.csv'), 'utf8').catch(() => '');
      if (process.env.DSTACK_WRITE_OCI_SNAPSHOT) {
        const { writeFile } = await import('node:fs/promises');
        await writeFile(join(BUNDLED_SNAPSHOT_DIRECTORY, 'oci.csv'), formatCatalogCsv(items));
        return;
      }
      expect(formatCatalogCsv(items)).toBe(bundled);
    } finally {
      await emulator.close();
    }
  });
});
