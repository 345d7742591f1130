import { Catalog } from '@dstack/catalog';
import { describe, expect, it } from 'vitest';
import type { HostResources } from './host-resources.js';
import plugin from './index.js';
import { LocalCatalogProvider } from './local-catalog-provider.js';

const HOST: HostResources = {
  cpuCount: 8,
  cpuArch: 'x86',
  memoryGib: 32,
  diskGib: 250,
  gpus: [{ name: 'L4', memoryGib: 24, vendor: 'nvidia' }],
};

/** A catalog with only the local provider (no offline catalog files). */
function localCatalog(provider = new LocalCatalogProvider({ hostResources: HOST })): Catalog {
  return new Catalog({ providers: [] }).addProvider(provider);
}

describe('LocalCatalogProvider', () => {
  it("answers a catalog query with the host's row, free", async () => {
    const items = await localCatalog().query({ provider: 'local' });

    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      provider: 'local',
      instanceName: 'local',
      location: 'local',
      price: 0,
      cpu: 8,
      memory: 32,
      gpuCount: 1,
      gpuName: 'L4',
      diskSize: 250,
    });
  });

  it('returns nothing when the host does not satisfy the filter', async () => {
    const catalog = localCatalog();

    expect(await catalog.query({ provider: 'local', minCpu: 16 })).toEqual([]);
    expect(await catalog.query({ provider: 'local', minGpuCount: 2 })).toEqual([]);
    expect(await catalog.query({ provider: 'local', gpuName: 'H100' })).toEqual([]);
    expect(await catalog.query({ provider: 'local', minCpu: 4, gpuName: 'l4' })).toHaveLength(1);
  });

  it('detects the host when given no resources', async () => {
    const [item] = await new LocalCatalogProvider().query({});

    expect(item?.cpu).toBeGreaterThan(0);
    expect(item?.memory).toBeGreaterThan(0);
    expect(item?.diskSize).toBeGreaterThan(0);
  });

  it('is the online provider the descriptor carries', () => {
    expect(plugin.catalogProvider).toBeInstanceOf(LocalCatalogProvider);
    expect(plugin.catalogProvider).toMatchObject({ kind: 'online', name: 'local' });
  });
});
