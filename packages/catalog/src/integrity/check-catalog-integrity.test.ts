import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem } from '../catalog-item.js';
import {
  checkCatalogIntegrity,
  checkOfferRules,
  checkPriceScaling,
  findSpotAboveOnDemand,
} from './check-catalog-integrity.js';

function offer(overrides: Partial<CatalogItem> = {}): CatalogItem {
  return createCatalogItem({
    provider: 'test',
    instanceName: 'g.1',
    location: 'here',
    price: 1,
    cpu: 4,
    memory: 16,
    gpuCount: 1,
    gpuName: 'T4',
    gpuMemory: 16,
    gpuVendor: 'nvidia',
    ...overrides,
  });
}

describe('checkOfferRules', () => {
  it('accepts well-formed GPU and CPU offers', () => {
    const cpu = offer({ gpuCount: 0, gpuName: null, gpuMemory: null, gpuVendor: null, diskSize: 100 });
    expect(checkOfferRules([offer(), cpu])).toEqual([]);
  });

  it.each([
    [{ instanceName: '' }, 'name'],
    [{ location: '' }, 'location'],
    [{ price: 0 }, 'price'],
    [{ cpu: 0 }, 'cpu'],
    [{ memory: -1 }, 'memory'],
    [{ diskSize: 0 }, 'disk'],
    [{ gpuName: null }, 'gpu'],
    [{ gpuMemory: 0 }, 'gpu'],
    [{ gpuVendor: null }, 'gpu'],
    [{ gpuCount: 0 }, 'gpu'],
  ] as Array<[Partial<CatalogItem>, string]>)('flags %o as %s', (overrides, check) => {
    // Overrides spread over a valid offer, not through createCatalogItem, which would infer the vendor.
    const problems = checkOfferRules([{ ...offer(), ...overrides }]);
    expect(problems.map((p) => p.check)).toEqual([check]);
    expect(problems[0]?.index).toBe(0);
  });
});

describe('checkCatalogIntegrity', () => {
  it('reports an empty catalog', () => {
    expect(checkCatalogIntegrity([])).toEqual([{ check: 'non-empty', message: 'the catalog has no offers' }]);
  });

  it('requires both markets, expected GPUs, memories, prefixes, locations and price order', () => {
    const items = [offer({ price: 2 }), offer({ price: 1, instanceName: 'g.2', location: 'there' })];
    const problems = checkCatalogIntegrity(items, {
      gpuNames: ['T4', 'H100'],
      gpuNamesVendor: 'nvidia',
      gpuMemories: { T4: [16, 32] },
      gpuNamePrefixes: ['v5p-'],
      instancesInLocations: { 'g.1': ['here', 'elsewhere'] },
    });
    expect(problems.map((p) => p.check)).toEqual([
      'spot',
      'gpu-names',
      'gpu-memory',
      'gpu-name-prefix',
      'instance-locations',
      'sorted',
    ]);
    expect(problems.find((p) => p.check === 'gpu-names')?.message).toBe('missing nvidia GPUs: H100');
  });

  it('tolerates a small share of spot prices above on-demand, not a large one', () => {
    const pairs = Array.from({ length: 20 }, (_, i) => [
      offer({ instanceName: `t.${i}`, price: 0.5, spot: true }),
      offer({ instanceName: `t.${i}`, price: 1 }),
    ]).flat();
    pairs[0] = offer({ instanceName: 't.0', price: 1.5, spot: true });
    const sorted = [...pairs].sort((a, b) => a.price - b.price);
    expect(findSpotAboveOnDemand(sorted).exceptions).toEqual([
      { instanceName: 't.0', location: 'here', spotPrice: 1.5, onDemandPrice: 1 },
    ]);
    expect(checkCatalogIntegrity(sorted)).toEqual([]);
    expect(checkCatalogIntegrity(sorted, { maxSpotAboveOnDemandShare: 0 }).map((p) => p.check)).toEqual([
      'spot-below-on-demand',
    ]);
  });
});

describe('checkPriceScaling', () => {
  const family = (prices: Record<number, number>) =>
    Object.entries(prices).map(([count, price]) =>
      offer({ instanceName: `a2-highgpu-${count}g`, gpuCount: Number(count), price }),
    );

  it('accepts prices that rise with the GPU count', () => {
    expect(
      checkPriceScaling(family({ 1: 3, 2: 6, 4: 12 }), { family: 'a2-highgpu-', proportionalWithin: 1.05 }),
    ).toEqual([]);
  });

  it('reports a price that does not rise, and a non-proportional one', () => {
    expect(
      checkPriceScaling(family({ 1: 3, 2: 3 }), { family: 'a2-highgpu-' }).map((p) => p.message),
    ).toEqual(['a2-highgpu- here: 2 GPUs cost 3, not more than 1 GPUs (3)']);
    expect(
      checkPriceScaling(family({ 1: 3, 2: 9 }), { family: 'a2-highgpu-', proportionalWithin: 1.05 }),
    ).toHaveLength(1);
  });

  it('reports a family with no offers', () => {
    expect(checkPriceScaling([], { family: 'x-' })[0]?.check).toBe('price-scaling');
  });
});
