import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem, type QueryFilter } from '../catalog-item.js';
import { formatCatalogCsv, parseCatalogCsv } from '../csv/catalog-csv.js';
import type { CatalogWarning } from '../csv/catalog-row-decoder.js';
import { ACCELERATOR_VENDORS, type AcceleratorVendor } from '../gpus/known-accelerators.js';
import { matches } from '../matching/matches.js';
import { ColumnarCatalog } from './columnar-catalog.js';

/** Small deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const GPUS: ReadonlyArray<[string, AcceleratorVendor, number]> = [
  ['A100', 'nvidia', 40],
  ['A100', 'nvidia', 80],
  ['a100', 'nvidia', 80],
  ['H100', 'nvidia', 80],
  ['T4', 'nvidia', 16],
  ['RTX3060Ti', 'nvidia', 8],
  ['B200', 'nvidia', 180],
  ['L4', 'nvidia', 24],
  ['P100', 'nvidia', 16],
  ['X999', 'nvidia', 12],
  ['MI300X', 'amd', 192],
  ['A100', 'amd', 40],
  ['v5litepod', 'google', 0],
  ['Gaudi2', 'intel', 96],
  ['n300', 'tenstorrent', 24],
];
const FLAG_SETS = [[], [], [], ['a'], ['b'], ['a', 'b'], ['gcp-g4-preview']];
const LOCATIONS = ['us-east-1', 'eu-west-1', 'us-central1-a'];
const PRICES = [0.1, 0.5, 1, 1.2, 2.04, 3.67339, 12, 98.32];

function pick<T>(next: () => number, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

function generateItems(count: number, seed: number): CatalogItem[] {
  const next = random(seed);
  const items: CatalogItem[] = [];
  for (let index = 0; index < count; index++) {
    const hasGpu = next() < 0.7;
    const [gpuName, gpuVendor, gpuMemory] = pick(next, GPUS);
    const gpuCount = hasGpu ? pick(next, [1, 1, 2, 4, 8]) : 0;
    items.push(
      createCatalogItem({
        provider: 'test',
        instanceName: `type-${Math.floor(next() * 50)}`,
        location: pick(next, LOCATIONS),
        // Ties are common in real catalogs and test the stable order.
        price: next() < 0.5 ? pick(next, PRICES) : Math.round(next() * 10000) / 100,
        cpu: pick(next, [1, 2, 4, 8, 16, 48, 96, 192]),
        memory: pick(next, [0.5, 2, 8, 16, 64, 85, 2048]),
        gpuCount,
        gpuName: hasGpu ? gpuName : null,
        gpuMemory: hasGpu ? (next() < 0.05 ? null : gpuMemory) : null,
        spot: next() < 0.3,
        diskSize: next() < 0.6 ? null : pick(next, [0, 50, 100, 500]),
        gpuVendor: hasGpu ? gpuVendor : null,
        flags: [...pick(next, FLAG_SETS)],
        cpuArch: next() < 0.8 ? 'x86' : 'arm',
        providerData: next() < 0.8 ? {} : { zone: pick(next, LOCATIONS), dws: next() < 0.5 },
      }),
    );
  }
  return items;
}

function generateFilter(next: () => number): QueryFilter {
  const filter: QueryFilter = {};
  const maybe = (probability: number) => next() < probability;
  if (maybe(0.1)) filter.provider = [pick(next, ['test', 'TEST', 'other'])];
  if (maybe(0.2)) filter.minPrice = pick(next, [...PRICES, 0, 50]);
  if (maybe(0.3)) filter.maxPrice = pick(next, [...PRICES, 0, 50]);
  if (maybe(0.2)) filter.spot = maybe(0.5);
  if (maybe(0.1)) filter.cpuArch = pick(next, ['x86', 'arm'] as const);
  if (maybe(0.2)) filter.minCpu = pick(next, [1, 4, 16, 100]);
  if (maybe(0.1)) filter.maxCpu = pick(next, [1, 4, 16, 100]);
  if (maybe(0.2)) filter.minMemory = pick(next, [0.5, 8, 64, 100]);
  if (maybe(0.1)) filter.maxMemory = pick(next, [0.5, 8, 64, 100]);
  if (maybe(0.4)) filter.minGpuCount = pick(next, [0, 0, 1, 2, 8]);
  if (maybe(0.2)) filter.maxGpuCount = pick(next, [0, 1, 4]);
  if (maybe(0.2)) filter.gpuVendor = pick(next, ACCELERATOR_VENDORS);
  if (maybe(0.3)) {
    filter.gpuName = pick(next, [
      [],
      ['A100'],
      ['a100', 'h100'],
      ['RTX3060TI'],
      ['x999'],
      ['V5LitePod', 'mi300x'],
    ]);
  }
  if (maybe(0.2))
    filter.minComputeCapability = pick(next, [
      [7, 0],
      [8, 0],
      [8, 6],
      [9, 0],
      [12, 0],
    ] as const);
  if (maybe(0.1))
    filter.maxComputeCapability = pick(next, [
      [7, 5],
      [8, 0],
      [9, 0],
    ] as const);
  if (maybe(0.2)) filter.minGpuMemory = pick(next, [0, 16, 24, 80]);
  if (maybe(0.1)) filter.maxGpuMemory = pick(next, [0, 16, 24, 80]);
  if (maybe(0.1)) filter.minTotalGpuMemory = pick(next, [0, 80, 640]);
  if (maybe(0.1)) filter.maxTotalGpuMemory = pick(next, [0, 80, 640]);
  if (maybe(0.1)) filter.minDiskSize = pick(next, [0, 100]);
  if (maybe(0.1)) filter.maxDiskSize = pick(next, [50, 100]);
  if (maybe(0.3)) filter.allowedFlags = pick(next, [[], ['a'], ['a', 'b'], ['gcp-g4-preview']]);
  return filter;
}

/** Stable sort by price, as the columnar store orders rows. */
function byPrice(items: CatalogItem[]): CatalogItem[] {
  return items
    .map((item, index) => ({ item, index }))
    .sort((left, right) => left.item.price - right.item.price || left.index - right.index)
    .map(({ item }) => item);
}

describe('ColumnarCatalog', () => {
  const items = generateItems(3000, 42);
  const sorted = byPrice(items);
  const catalog = ColumnarCatalog.fromItems('test', items);

  it('keeps every row, sorted by price with ties in input order', () => {
    expect(catalog.size).toBe(items.length);
    expect(catalog.toItems()).toEqual(sorted);
    expect([...catalog]).toEqual(sorted);
    expect(catalog.at(0)).toEqual(sorted[0]);
    expect(() => catalog.at(items.length)).toThrow(RangeError);
  });

  it('query() equals filter(matches) on random filters', () => {
    const next = random(7);
    let nonEmpty = 0;
    for (let round = 0; round < 600; round++) {
      const filter = generateFilter(next);
      const expected = sorted.filter((item) => matches(item, filter));
      const actual = catalog.query(filter);
      if (expected.length > 0) nonEmpty++;
      expect(actual, JSON.stringify(filter)).toEqual(expected);
    }
    // The generator must exercise both outcomes.
    expect(nonEmpty).toBeGreaterThan(200);
  });

  it.each<[string, QueryFilter]>([
    ['CPU rule', { minGpuCount: 0, gpuName: ['A100'] }],
    ['compute capability', { minComputeCapability: [8, 0], maxComputeCapability: [9, 0] }],
    ['flags', { allowedFlags: [] }],
    ['price range', { minPrice: 1.2, maxPrice: 12 }],
    ['disk', { minDiskSize: 100 }],
    ['empty', {}],
  ])('query() equals filter(matches): %s', (_name, filter) => {
    expect(catalog.query(filter)).toEqual(sorted.filter((item) => matches(item, filter)));
  });

  it('fromCsv reads the same rows as parseCatalogCsv', () => {
    const text = formatCatalogCsv(items);
    const fromCsv = ColumnarCatalog.fromCsv('test', text);
    expect(fromCsv.toItems()).toEqual(byPrice(parseCatalogCsv(text, { provider: 'test' })));
    expect(fromCsv.toItems()).toEqual(sorted);
    const filter: QueryFilter = { gpuName: ['a100'], spot: false, allowedFlags: ['a'] };
    expect(fromCsv.query(filter)).toEqual(catalog.query(filter));
  });

  it('fromCsv skips malformed rows with warnings', () => {
    const warnings: CatalogWarning[] = [];
    const text =
      'instance_name,location,price,cpu,memory,gpu_count,spot\na,l,2.0,1,1.0,0,False\nb,l,x,1,1.0,0,False\n';
    const result = ColumnarCatalog.fromCsv('AWS', text, {
      source: 'aws.csv',
      onWarning: (w) => warnings.push(w),
    });
    expect(result.provider).toBe('aws');
    expect(result.toItems().map((i) => i.instanceName)).toEqual(['a']);
    expect(warnings).toEqual([
      { source: 'aws.csv', line: 3, message: `column 'price': cannot parse "x" as a number` },
    ]);
  });

  it('returns fresh objects that callers may change', () => {
    const [first] = catalog.query({ minGpuCount: 1 });
    first!.price = -1;
    const [again] = catalog.query({ minGpuCount: 1 });
    expect(again!.price).not.toBe(-1);
  });

  it('shares empty flags and provider data, frozen, so a change throws instead of leaking', () => {
    const bare = { ...items[0]!, flags: [], providerData: {} };
    const [first, second] = ColumnarCatalog.fromItems('x', [bare, bare]).query({});
    expect(first!.flags).toEqual([]);
    expect(first!.flags).toBe(second!.flags);
    expect(() => first!.flags.push('mutated')).toThrow(TypeError);
    expect(() => {
      (first!.providerData as Record<string, unknown>).mutated = true;
    }).toThrow(TypeError);
    expect(second!.providerData).toEqual({});
    const flagged = ColumnarCatalog.fromItems('x', [{ ...bare, flags: ['a'] }]);
    flagged.at(0).flags.push('mutated');
    expect(flagged.at(0).flags).toEqual(['a']);
  });

  it('copies nested provider data for every result', () => {
    const nested = { ...items[0]!, providerData: { zones: ['a', 'b'], spec: { hbm: 16 } } };
    const store = ColumnarCatalog.fromItems(
      'x',
      (function* () {
        yield nested;
        yield { ...nested, price: nested.price + 1 };
      })(),
    );
    const [first, second] = store.query({});
    expect(first!.providerData).toEqual(nested.providerData);
    (first!.providerData.zones as string[]).push('c');
    expect(second!.providerData).toEqual(nested.providerData);
    expect(store.at(0).providerData).toEqual(nested.providerData);
  });

  it('answers an empty list for another provider and handles an empty catalog', () => {
    expect(catalog.query({ provider: ['gcp'] })).toEqual([]);
    expect(ColumnarCatalog.fromItems('x', []).query({})).toEqual([]);
  });

  it('rejects items it cannot store faithfully', () => {
    const [item] = items;
    expect(() => ColumnarCatalog.fromItems('x', [{ ...item!, cpu: 0.5 }])).toThrow(/cpu must be an integer/);
    expect(() => ColumnarCatalog.fromItems('x', [{ ...item!, price: Number.NaN }])).toThrow(/price/);
  });
});
