import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem } from '../../catalog-item.js';
import { collectList, parseNumberOption } from './query.js';
import { queryOptionsToFilter } from './query-options.js';
import { formatGpu, formatOffersTable, offerToJson, shouldUseColor } from './query-output.js';

const h100: CatalogItem = createCatalogItem({
  provider: 'aws',
  instanceName: 'p5.48xlarge',
  location: 'us-east-1',
  price: 55.04,
  cpu: 192,
  memory: 2048,
  gpuCount: 8,
  gpuName: 'H100',
  gpuMemory: 80,
  gpuVendor: 'nvidia',
});
const cpu: CatalogItem = createCatalogItem({
  provider: 'aws',
  instanceName: 't3.medium',
  location: 'us-east-1',
  price: 0.0142,
  cpu: 2,
  memory: 3.8,
  spot: true,
});

describe('formatOffersTable', () => {
  it('aligns columns, right-aligns numbers and shows GPUs as 8xH100 (80GB)', () => {
    expect(formatOffersTable([cpu, h100])).toBe(
      [
        'PROVIDER  INSTANCE     LOCATION   CPU  MEMORY  GPU            SPOT  PRICE ($/h)',
        'aws       t3.medium    us-east-1    2   3.8GB  -              yes        0.0142',
        'aws       p5.48xlarge  us-east-1  192  2048GB  8xH100 (80GB)  no          55.04',
        '',
      ].join('\n'),
    );
  });

  it('prints only the header for no offers, in bold with colour', () => {
    const text = formatOffersTable([], { color: true });
    expect(text.startsWith('\u001b[1mPROVIDER')).toBe(true);
    expect(text.endsWith('PRICE ($/h)\u001b[22m\n')).toBe(true);
  });

  it('formats GPU-less and memory-less GPU offers', () => {
    expect(formatGpu(cpu)).toBe('-');
    expect(formatGpu({ ...h100, gpuMemory: null })).toBe('8xH100');
  });
});

describe('offerToJson', () => {
  it('uses the CSV column names with typed values', () => {
    expect(offerToJson(cpu)).toEqual({
      provider: 'aws',
      instance_name: 't3.medium',
      location: 'us-east-1',
      price: 0.0142,
      cpu: 2,
      memory: 3.8,
      gpu_count: 0,
      gpu_name: null,
      gpu_memory: null,
      spot: true,
      disk_size: null,
      gpu_vendor: null,
      flags: [],
      cpu_arch: 'x86',
      provider_data: {},
    });
  });
});

describe('shouldUseColor', () => {
  it('colours TTYs unless NO_COLOR or TERM=dumb; FORCE_COLOR forces', () => {
    expect(shouldUseColor({ isTTY: true }, {})).toBe(true);
    expect(shouldUseColor({ isTTY: false }, {})).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(shouldUseColor({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    expect(shouldUseColor({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
  });
});

describe('query option parsing', () => {
  it('parses numbers and names the flag on errors', () => {
    expect(parseNumberOption('max-price', false)('2.5')).toBe(2.5);
    expect(() => parseNumberOption('min-cpu', true)('1.5')).toThrow('--min-cpu expects a whole number');
    expect(() => parseNumberOption('min-memory', false)('')).toThrow('--min-memory');
    expect(() => parseNumberOption('min-memory', false)('-1')).toThrow('--min-memory');
  });

  it('accumulates repeated and comma-separated lists', () => {
    expect(collectList('vastai', collectList('aws, gcp', undefined))).toEqual(['aws', 'gcp', 'vastai']);
    expect(collectList('', undefined)).toEqual([]);
  });

  it('builds a normalised QueryFilter without the output options', () => {
    expect(
      queryOptionsToFilter({
        format: 'json',
        limit: 3,
        catalogDir: '/tmp',
        provider: ['AWS'],
        gpuName: ['H100'],
        minComputeCapability: '8.0',
        gpuVendor: 'NVIDIA',
        spot: false,
        allowedFlags: [],
        minGpuCount: 1,
      }),
    ).toEqual({
      provider: ['aws'],
      gpuName: ['H100'],
      minComputeCapability: [8, 0],
      gpuVendor: 'nvidia',
      spot: false,
      allowedFlags: [],
      minGpuCount: 1,
    });
    expect(() => queryOptionsToFilter({ format: 'table', maxComputeCapability: 'x' })).toThrow(
      /maxComputeCapability/,
    );
  });
});
