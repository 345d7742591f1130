import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CatalogItem } from '../catalog-item.js';
import { parseCatalogCsv } from '../csv/catalog-csv.js';
import { checkCatalogIntegrity, findSpotAboveOnDemand } from './check-catalog-integrity.js';
import { AWS_SNAPSHOT_EXPECTATIONS, GCP_SNAPSHOT_EXPECTATIONS } from './snapshot-expectations.js';

const snapshotDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../assets/snapshot');

async function loadSnapshot(provider: string): Promise<CatalogItem[]> {
  const warnings: unknown[] = [];
  const text = await readFile(path.join(snapshotDirectory, `${provider}.csv`), 'utf8');
  const items = parseCatalogCsv(text, { provider, onWarning: (warning) => warnings.push(warning) });
  expect(warnings).toEqual([]);
  return items;
}

describe.each([
  ['aws', AWS_SNAPSHOT_EXPECTATIONS],
  ['gcp', GCP_SNAPSHOT_EXPECTATIONS],
] as const)('bundled %s snapshot', (provider, expectations) => {
  let items: CatalogItem[] = [];
  beforeAll(async () => {
    items = await loadSnapshot(provider);
  });

  it('passes the gpuhunt integrity checks', () => {
    expect(items.length).toBeGreaterThan(100);
    expect(checkCatalogIntegrity(items, expectations)).toEqual([]);
  });

  it('has spot at or below on-demand for the vast majority of (type, location) pairs', () => {
    const { pairs, exceptions } = findSpotAboveOnDemand(items);
    for (const exception of exceptions)
      console.info(
        `${provider}: spot above on-demand: ${exception.instanceName} @ ${exception.location} ${exception.spotPrice} > ${exception.onDemandPrice}`,
      );
    expect(pairs).toBeGreaterThan(50);
    expect(exceptions.length / pairs).toBeLessThanOrEqual(0.05);
  });

  it('carries one provider, one row per (type, GPUs, location, market)', () => {
    expect(new Set(items.map((item) => item.provider))).toEqual(new Set([provider]));
    const keys = items.map(
      (item) =>
        `${item.instanceName}|${item.gpuCount}x${item.gpuName}|${item.location}|${item.spot}|${item.flags}`,
    );
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('bundled snapshot specifics', () => {
  it('aws: published families only, CPU rows included, locations are regions', async () => {
    const items = await loadSnapshot('aws');
    const families = new Set(items.map((item) => item.instanceName.split('.')[0]));
    expect([...families].sort()).toEqual(
      ['c5', 'c7i', 'g4dn', 'g5', 'g6', 'g6e', 'gr6', 'm5', 'p4d', 'p4de', 'p5', 'p5en', 't3'].sort(),
    );
    expect(items.some((item) => item.gpuCount === 0)).toBe(true);
    expect(items.every((item) => /^[a-z]+(-[a-z]+)+-\d$/.test(item.location))).toBe(true);
    expect(items.find((item) => item.instanceName === 'p4de.24xlarge')).toMatchObject({
      gpuName: 'A100',
      gpuMemory: 80,
    });
  });

  it('gcp: zones as locations, TPUs from the spec table, no placeholder prices, no P4/K80', async () => {
    const items = await loadSnapshot('gcp');
    expect(items.every((item) => /^[a-z]+-[a-z]+\d-[a-z]$/.test(item.location))).toBe(true);
    const tpus = items.filter((item) => item.gpuVendor === 'google');
    expect(new Set(tpus.map((item) => item.instanceName))).toEqual(
      new Set([
        'v2-8',
        'v3-8',
        'v5litepod-1',
        'v5litepod-4',
        'v5litepod-8',
        'v5p-8',
        'v6e-1',
        'v6e-4',
        'v6e-8',
      ]),
    );
    expect(tpus.every((item) => item.gpuCount === 1 && item.gpuName === item.instanceName)).toBe(true);
    expect(items.some((item) => item.price === 700)).toBe(false);
    expect(items.some((item) => item.gpuName === 'P4' || item.gpuName === 'K80')).toBe(false);
    // gpuhunt's filter keeps only spot a3-highgpu below 8 GPUs and spot a3-ultragpu.
    expect(items.filter((item) => item.instanceName === 'a3-highgpu-1g').every((item) => item.spot)).toBe(
      true,
    );
    expect(
      items.filter((item) => item.instanceName.startsWith('a3-ultragpu')).every((item) => item.spot),
    ).toBe(true);
  });
});
