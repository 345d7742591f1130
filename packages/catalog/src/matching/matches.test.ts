import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem, type QueryFilter } from '../catalog-item.js';
import { correctGpuMemoryGib } from '../gpus/known-accelerators.js';
import { matches, normalizeQueryFilter, parseComputeCapability } from './matches.js';

// Cases ported from gpuhunt's src/tests/_internal/test_constraints.py.

function gpuItem(overrides: Partial<CatalogItem> = {}): CatalogItem {
  return createCatalogItem({
    provider: 'aws',
    instanceName: 'large',
    location: 'us-east-1',
    price: 1.2,
    cpu: 16,
    memory: 64,
    gpuCount: 1,
    gpuName: 'A100',
    gpuMemory: 40,
    gpuVendor: 'nvidia',
    ...overrides,
  });
}

function cpuItem(overrides: Partial<CatalogItem> = {}): CatalogItem {
  return gpuItem({ gpuCount: 0, gpuName: null, gpuMemory: null, gpuVendor: null, ...overrides });
}

const verda = cpuItem({
  provider: 'verda',
  instanceName: 'CPU.120V.480G',
  location: 'ICE-01',
  price: 3,
  cpu: 120,
  memory: 480,
});
const awsCpu = cpuItem({
  instanceName: 'c5.12xlarge',
  location: 'us-east-2',
  price: 2.04,
  cpu: 48,
  memory: 96,
});

describe('matches (gpuhunt test_constraints)', () => {
  it.each<[string, QueryFilter, boolean]>([
    ['empty', {}, true],
    ['minCpu equal', { minCpu: 16 }, true],
    ['maxCpu equal', { maxCpu: 16 }, true],
    ['minCpu above', { minCpu: 32 }, false],
    ['maxCpu below', { maxCpu: 8 }, false],
    ['minMemory equal', { minMemory: 64 }, true],
    ['maxMemory equal', { maxMemory: 64 }, true],
    ['minMemory above', { minMemory: 128 }, false],
    ['maxMemory below', { maxMemory: 32 }, false],
    ['vendor nvidia', { gpuVendor: 'nvidia' }, true],
    ['vendor amd', { gpuVendor: 'amd' }, false],
    ['minGpuCount equal', { minGpuCount: 1 }, true],
    ['maxGpuCount equal', { maxGpuCount: 1 }, true],
    ['minGpuCount above', { minGpuCount: 2 }, false],
    ['maxGpuCount 0', { maxGpuCount: 0 }, false],
    ['minGpuMemory equal', { minGpuMemory: 40 }, true],
    ['maxGpuMemory equal', { maxGpuMemory: 40 }, true],
    ['minGpuMemory above', { minGpuMemory: 80 }, false],
    ['maxGpuMemory below', { maxGpuMemory: 20 }, false],
    ['gpuName lowercase', { gpuName: ['a100'] }, true],
    ['gpuName exact', { gpuName: ['A100'] }, true],
    ['gpuName other', { gpuName: ['A10'] }, false],
    ['gpuName one of several', { gpuName: ['H100', 'a100'] }, true],
    ['gpuName empty list', { gpuName: [] }, false],
    ['minTotalGpuMemory equal', { minTotalGpuMemory: 40 }, true],
    ['maxTotalGpuMemory equal', { maxTotalGpuMemory: 40 }, true],
    ['minTotalGpuMemory above', { minTotalGpuMemory: 80 }, false],
    ['maxTotalGpuMemory below', { maxTotalGpuMemory: 20 }, false],
    ['minPrice equal', { minPrice: 1.2 }, true],
    ['maxPrice equal', { maxPrice: 1.2 }, true],
    ['minPrice above', { minPrice: 1.3 }, false],
    ['maxPrice below', { maxPrice: 1.1 }, false],
    ['spot false', { spot: false }, true],
    ['spot true', { spot: true }, false],
    ['minComputeCapability equal', { minComputeCapability: [8, 0] }, true],
    ['maxComputeCapability equal', { maxComputeCapability: [8, 0] }, true],
    ['minComputeCapability above', { minComputeCapability: [8, 1] }, false],
    ['maxComputeCapability below', { maxComputeCapability: [7, 9] }, false],
    ['cpuArch x86', { cpuArch: 'x86' }, true],
    ['cpuArch arm', { cpuArch: 'arm' }, false],
    ['provider', { provider: ['aws'] }, true],
    ['provider uppercase', { provider: ['AWS'] }, true],
    ['provider other', { provider: ['gcp'] }, false],
  ])('A100 item, %s', (_name, filter, expected) => {
    expect(matches(gpuItem(), filter)).toBe(expected);
  });

  it('vendor amd item', () => {
    const item = gpuItem({ gpuVendor: 'amd' });
    expect(matches(item, { gpuVendor: 'amd' })).toBe(true);
    expect(matches(item, { gpuVendor: 'nvidia' })).toBe(false);
  });

  it('compute capability applies to NVIDIA only', () => {
    const item = gpuItem({ gpuVendor: 'amd' });
    expect(matches(item, { minComputeCapability: [8, 0] })).toBe(false);
    expect(matches(item, { maxComputeCapability: [8, 0] })).toBe(false);
  });

  it('compute capability of an unknown GPU fails', () => {
    expect(matches(gpuItem({ gpuName: 'X999' }), { minComputeCapability: [1, 0] })).toBe(false);
  });

  it('compute capability lookup is case-insensitive, compares lexicographically', () => {
    const item = gpuItem({ gpuName: 'rtx3060ti', gpuMemory: 8 });
    expect(matches(item, { minComputeCapability: [8, 6], maxComputeCapability: [8, 6] })).toBe(true);
    expect(matches(gpuItem({ gpuName: 'B200', gpuMemory: 180 }), { minComputeCapability: [9, 9] })).toBe(
      true,
    );
  });

  it('Ti GPU names match case-insensitively', () => {
    expect(matches(gpuItem({ gpuName: 'RTX3060Ti', gpuMemory: 8 }), { gpuName: ['RTX3060TI'] })).toBe(true);
  });

  it('providers', () => {
    expect(matches(verda, { provider: ['verda'] })).toBe(true);
    expect(matches(verda, { provider: ['aws'] })).toBe(false);
    expect(matches(awsCpu, { provider: ['aws'] })).toBe(true);
    expect(matches(awsCpu, { provider: ['AWS'] })).toBe(true);
    expect(matches(awsCpu, { provider: ['verda'] })).toBe(false);
  });

  it.each<[string, string[], readonly string[] | undefined, boolean]>([
    ['matches if no flags', [], ['a'], true],
    ['matches if no flags and all flags allowed', [], undefined, true],
    ['matches if has flags and all flags allowed', ['a', 'b'], undefined, true],
    ['matches if has flags all of which allowed', ['a', 'b'], ['a', 'b', 'c'], true],
    ['not matches if some flags not allowed', ['a', 'b'], ['a'], false],
    ['empty allow list rejects flagged rows', ['a'], [], false],
  ])('flags: %s', (_name, flags, allowedFlags, expected) => {
    const filter: QueryFilter = allowedFlags === undefined ? {} : { allowedFlags };
    expect(matches(gpuItem({ flags }), filter)).toBe(expected);
  });

  it('matches CPU instances with zero GPU count and GPU memory', () => {
    expect(matches(cpuItem(), { minGpuCount: 0, minGpuMemory: 24 })).toBe(true);
  });

  it.each<[string, QueryFilter, boolean]>([
    ['no GPU constraint', {}, true],
    ['maxGpuCount 0', { maxGpuCount: 0 }, true],
    ['gpuName without minGpuCount 0', { gpuName: ['A100'] }, false],
    ['gpuName with minGpuCount 0', { gpuName: ['A100'], minGpuCount: 0 }, true],
    ['vendor without minGpuCount 0', { gpuVendor: 'nvidia' }, false],
    ['vendor with minGpuCount 0', { gpuVendor: 'nvidia', minGpuCount: 0 }, true],
    ['minGpuMemory without minGpuCount 0', { minGpuMemory: 24 }, false],
    ['maxGpuMemory without minGpuCount 0', { maxGpuMemory: 24 }, true],
    ['minTotalGpuMemory without minGpuCount 0', { minTotalGpuMemory: 1 }, false],
    ['compute capability without minGpuCount 0', { minComputeCapability: [7, 0] }, false],
    ['compute capability with minGpuCount 0', { minComputeCapability: [7, 0], minGpuCount: 0 }, true],
    ['minGpuCount 1', { minGpuCount: 1 }, false],
    ['CPU bounds still apply with minGpuCount 0', { minGpuCount: 0, minCpu: 17 }, false],
  ])('CPU rule: %s', (_name, filter, expected) => {
    expect(matches(cpuItem(), filter)).toBe(expected);
  });

  it('minGpuCount 0 keeps GPU constraints on GPU rows', () => {
    expect(matches(gpuItem(), { minGpuCount: 0, gpuName: ['H100'] })).toBe(false);
    expect(matches(gpuItem(), { minGpuCount: 0, gpuName: ['A100'] })).toBe(true);
  });

  it.each<[string, number | null, QueryFilter, boolean]>([
    ['disk within bounds', 100, { minDiskSize: 100, maxDiskSize: 100 }, true],
    ['disk below min', 50, { minDiskSize: 100 }, false],
    ['disk above max', 500, { maxDiskSize: 100 }, false],
    ['no disk ignores disk bounds', null, { minDiskSize: 100, maxDiskSize: 10 }, true],
  ])('%s', (_name, diskSize, filter, expected) => {
    expect(matches(gpuItem({ diskSize }), filter)).toBe(expected);
  });

  it('total GPU memory is count times memory', () => {
    const item = gpuItem({ gpuCount: 8, gpuName: 'H100', gpuMemory: 80 });
    expect(matches(item, { minTotalGpuMemory: 640, maxTotalGpuMemory: 640 })).toBe(true);
    expect(matches(item, { minTotalGpuMemory: 641 })).toBe(false);
  });

  it('GPU memory of a GPU row without memory counts as 0', () => {
    const item = gpuItem({ gpuName: 'v5litepod', gpuVendor: 'google', gpuMemory: null });
    expect(matches(item, { maxGpuMemory: 0 })).toBe(true);
    expect(matches(item, { minGpuMemory: 1 })).toBe(false);
  });
});

describe('correctGpuMemoryGib (gpuhunt test_correct_gpu_memory)', () => {
  it.each<[string, number, number]>([
    ['H100NVL', 95830, 94],
    ['L40S', 46068, 48],
    ['A10G', 23028, 24],
    ['A10', 4096, 4],
    ['unknown', 8200.1, 8],
  ])('%s %d MiB → %d GiB', (name, mib, gib) => {
    expect(correctGpuMemoryGib(name, mib)).toBe(gib);
  });
});

describe('normalizeQueryFilter', () => {
  it('turns strings into lists, lowercases providers, vendor and arch, parses compute capability', () => {
    expect(
      normalizeQueryFilter({
        provider: 'AWS',
        gpuName: 'A100',
        gpuVendor: 'NVIDIA',
        cpuArch: 'ARM',
        minComputeCapability: '8.0',
        maxComputeCapability: [9, 0],
        allowedFlags: new Set(['a']),
        minGpuCount: 0,
        spot: true,
      }),
    ).toEqual({
      provider: ['aws'],
      gpuName: ['A100'],
      gpuVendor: 'nvidia',
      cpuArch: 'arm',
      minComputeCapability: [8, 0],
      maxComputeCapability: [9, 0],
      allowedFlags: ['a'],
      minGpuCount: 0,
      spot: true,
    });
  });

  it('drops undefined and null fields', () => {
    expect(normalizeQueryFilter({ minCpu: undefined, provider: undefined })).toEqual({});
  });

  it.each<[string, Parameters<typeof normalizeQueryFilter>[0], RegExp]>([
    ['vendor', { gpuVendor: 'nvidiaa' }, /gpuVendor "nvidiaa".*nvidia, amd/],
    ['arch', { cpuArch: 'riscv' }, /cpuArch "riscv".*x86, arm/],
    ['compute capability', { minComputeCapability: '8.x' }, /minComputeCapability "8.x"/],
    ['number', { minCpu: 'two' as unknown as number }, /minCpu "two"/],
    ['spot', { spot: 'yes' as unknown as boolean }, /spot "yes"/],
  ])('rejects an invalid %s, naming the field', (_name, input, message) => {
    expect(() => normalizeQueryFilter(input)).toThrow(message);
  });

  it('parses compute capability forms', () => {
    expect(parseComputeCapability('x', '10.0')).toEqual([10, 0]);
    expect(parseComputeCapability('x', '9')).toEqual([9, 0]);
    expect(() => parseComputeCapability('x', '1.2.3')).toThrow(/x/);
  });
});
