/**
 * The online provider against the Vast.ai emulator: in a `Catalog` as gpuhunt's, and through
 * `dstack-catalog query --provider vastai`, which loads it from the installed backend package.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Catalog } from '@dstack/catalog';
import type { VastaiEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VastAiCatalogProvider } from './vastai-catalog-provider.js';
import { startVastAiTestEmulator } from './vastai-emulator.test.helpers.js';

const run = promisify(execFile);
const PACKAGE_DIRECTORY = resolve(dirname(fileURLToPath(import.meta.url)), '..');

let emulator: VastaiEmulator;

beforeAll(async () => {
  emulator = await startVastAiTestEmulator();
});

afterAll(async () => {
  await emulator?.close();
});

describe('the Vast.ai online catalog provider', () => {
  it('answers catalog queries live, filtered as asked, with spot rows at the minimum bid', async () => {
    const catalog = new Catalog({ providers: [] }).addProvider(
      new VastAiCatalogProvider({ endpointUrl: emulator.url }),
    );

    const h100 = await catalog.query({ provider: ['vastai'], gpuName: ['H100'], minDiskSize: 100 });
    const spot = await catalog.query({ provider: ['vastai'], spot: true });

    expect(h100.length).toBeGreaterThan(0);
    expect(h100.every((item) => item.gpuName === 'H100' && item.diskSize === 100)).toBe(true);
    expect(spot.length).toBeGreaterThan(0);
    for (const item of spot) {
      expect(item.price).toBeGreaterThanOrEqual(item.providerData.min_bid as number);
    }
  });

  it('vanished asks are gone from the next query', async () => {
    const provider = new VastAiCatalogProvider({ endpointUrl: emulator.url });
    const [first] = await provider.query({});
    if (!first) throw new Error('the emulator offers nothing');

    emulator.vanishAsk(Number(first.instanceName));

    expect((await provider.query({})).map((item) => item.instanceName)).not.toContain(first.instanceName);
  });

  it('is what `dstack-catalog query --provider vastai` asks, from the installed package', async () => {
    const project = mkdtempSync(join(tmpdir(), 'dstack-catalog-vastai-'));
    try {
      mkdirSync(join(project, 'node_modules', '@dstack'), { recursive: true });
      symlinkSync(PACKAGE_DIRECTORY, join(project, 'node_modules', '@dstack', 'backend-vastai'));
      const require = createRequire(import.meta.url);
      const catalogBin = resolve(
        dirname(require.resolve('@dstack/catalog/package.json')),
        'dist/bin/dstack-catalog.js',
      );
      const { stdout } = await run(
        process.execPath,
        [catalogBin, 'query', '--provider', 'vastai', '--gpu-name', 'RTX4090', '--format', 'json'],
        { cwd: project, env: { ...process.env, DSTACK_VASTAI_ENDPOINT_URL: emulator.url } },
      );
      const rows = JSON.parse(stdout) as Array<{ provider: string; gpu_name: string }>;

      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.provider === 'vastai' && row.gpu_name === 'RTX4090')).toBe(true);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});
