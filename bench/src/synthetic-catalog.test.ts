import { describe, expect, it } from 'vitest';
import { summarise } from './stats.js';
import { generateSyntheticCatalog } from './synthetic-catalog.js';

describe('generateSyntheticCatalog', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const first = generateSyntheticCatalog({ rows: 500, seed: 7 });
    expect(generateSyntheticCatalog({ rows: 500, seed: 7 })).toEqual(first);
    expect(generateSyntheticCatalog({ rows: 500, seed: 8 })).not.toEqual(first);
  });

  it('yields well-formed offers sorted by price, with GPU and CPU-only rows for the bench queries', () => {
    const items = generateSyntheticCatalog({ rows: 2000 });
    expect(items).toHaveLength(2000);
    expect(items.every((item, i) => i === 0 || (items[i - 1]?.price ?? 0) <= item.price)).toBe(true);
    expect(items.every((item) => item.price > 0 && item.cpu > 0 && item.memory > 0)).toBe(true);
    expect(items.every((item) => item.gpuCount > 0 === (item.gpuName !== null))).toBe(true);
    expect(
      items.some((item) => item.gpuName === 'A100' && item.gpuMemory === 80 && item.spot && item.price <= 3),
    ).toBe(true);
    expect(items.some((item) => item.gpuCount === 0 && item.cpu >= 16)).toBe(true);
  });
});

describe('summarise', () => {
  it('computes median and p90 by linear interpolation', () => {
    expect(summarise([5, 1, 3, 2, 4])).toEqual({ medianMs: 3, p90Ms: 4.6, runs: 5 });
  });
});
