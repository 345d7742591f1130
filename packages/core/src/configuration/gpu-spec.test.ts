import { describe, expect, test } from 'vitest';
import { GPU_SPEC_EXPECTATION, gpuSpecSchema, inferGpuVendor } from './gpu-spec.js';
import { resourcesSpecSchema } from './resources.js';

const ANY_COUNT = { min: 1, max: null };

describe('GPU spec text form', () => {
  test.each([
    [
      'A100:80GB:2',
      { vendor: 'nvidia', name: ['A100'], memory: { min: 80, max: 80 }, count: { min: 2, max: 2 } },
    ],
    ['24GB..:2', { memory: { min: 24, max: null }, count: { min: 2, max: 2 } }],
    ['H100,H200:8', { vendor: 'nvidia', name: ['H100', 'H200'], count: { min: 8, max: 8 } }],
    ['amd:MI300X:8', { vendor: 'amd', name: ['MI300X'], count: { min: 8, max: 8 } }],
    ['MI300X', { vendor: 'amd', name: ['MI300X'], count: ANY_COUNT }],
    ['tpu:v5litepod-8', { vendor: 'google', name: ['v5litepod-8'], count: ANY_COUNT }],
    ['v5litepod-8', { vendor: 'google', name: ['v5litepod-8'], count: ANY_COUNT }],
    ['tpu-v5litepod-8', { vendor: 'google', name: ['v5litepod-8'], count: ANY_COUNT }],
    ['nvidia:2', { vendor: 'nvidia', count: { min: 2, max: 2 } }],
    ['1..8', { count: { min: 1, max: 8 } }],
    ['A100', { vendor: 'nvidia', name: ['A100'], count: ANY_COUNT }],
    ['24GB', { memory: { min: 24, max: 24 }, count: ANY_COUNT }],
    ['16GB..24GB', { memory: { min: 16, max: 24 }, count: ANY_COUNT }],
    ['tt:n150:4', { vendor: 'tenstorrent', name: ['n150'], count: { min: 4, max: 4 } }],
    ['intel:Gaudi2', { vendor: 'intel', name: ['Gaudi2'], count: ANY_COUNT }],
    ['NewGpu9000:2', { name: ['NewGpu9000'], count: { min: 2, max: 2 } }],
    ['2:A10G', { vendor: 'nvidia', name: ['A10G'], count: { min: 2, max: 2 } }],
    [' A100 : 2 ', { vendor: 'nvidia', name: ['A100'], count: { min: 2, max: 2 } }],
    [2, { count: { min: 2, max: 2 } }],
    [0, { count: { min: 0, max: 0 } }],
    ['0', { count: { min: 0, max: 0 } }],
  ])('%j', (input, expected) => {
    expect(gpuSpecSchema.parse(input)).toEqual(expected);
  });

  test.each([
    ['A100:foo', "'foo' repeats the GPU names ('A100')"],
    ['A100::2', 'empty part'],
    ['2:4', "'4' repeats the count ('2')"],
    ['nvidia:amd', "'amd' repeats the vendor ('nvidia')"],
    ['80XB', "'80XB' is not a memory size"],
    ['A100,', "a GPU name in 'A100,' is empty"],
    ['', 'got an empty value'],
    ['3..1', 'invalid range'],
  ])('%j is rejected: %s', (input, detail) => {
    const message = gpuSpecSchema.safeParse(input).error?.issues[0]?.message ?? '';
    if (input !== '3..1') expect(message).toContain(`invalid GPU spec '${input}': ${GPU_SPEC_EXPECTATION}`);
    expect(message).toContain(detail);
  });

  test('mismatched vendor and name is an error', () => {
    expect(gpuSpecSchema.safeParse('amd:H100').error?.issues[0]?.message).toBe(
      "GPU 'H100' is made by nvidia, not amd",
    );
    expect(gpuSpecSchema.safeParse({ vendor: 'nvidia', name: ['MI300X'] }).error?.issues[0]?.message).toBe(
      "GPU 'MI300X' is made by amd, not nvidia",
    );
    expect(gpuSpecSchema.safeParse('H100,MI300X').error?.issues[0]?.message).toContain('different vendors');
  });
});

describe('GPU spec object form', () => {
  test('names, memory, count and compute capability', () => {
    expect(
      gpuSpecSchema.parse({
        name: ['A100'],
        memory: '80GB..',
        count: 2,
        total_memory: '160GB..',
        compute_capability: '8.0',
      }),
    ).toEqual({
      vendor: 'nvidia',
      name: ['A100'],
      memory: { min: 80, max: null },
      total_memory: { min: 160, max: null },
      count: { min: 2, max: 2 },
      compute_capability: [8, 0],
    });
  });

  test.each([
    ['7.5', [7, 5]],
    [7.5, [7, 5]],
    [8, [8, 0]],
    [
      [9, 0],
      [9, 0],
    ],
  ])('compute_capability %j → %j', (input, expected) => {
    expect(gpuSpecSchema.parse({ compute_capability: input }).compute_capability).toEqual(expected);
  });

  test('a single name string, tpu vendor alias and default count', () => {
    expect(gpuSpecSchema.parse({ name: 'L4', vendor: 'NVIDIA' })).toEqual({
      vendor: 'nvidia',
      name: ['L4'],
      count: ANY_COUNT,
    });
    expect(gpuSpecSchema.parse({ vendor: 'tpu' })).toEqual({ vendor: 'google', count: ANY_COUNT });
  });

  test('unknown fields and bad compute capability are errors', () => {
    expect(gpuSpecSchema.safeParse({ names: ['A100'] }).error?.issues[0]?.message).toContain(
      "unknown field 'names'",
    );
    expect(gpuSpecSchema.safeParse({ compute_capability: 'seven' }).error?.issues[0]?.message).toContain(
      "invalid compute capability 'seven'",
    );
  });

  test('inferGpuVendor knows the catalog and TPU slices', () => {
    expect(inferGpuVendor('mi300x')).toBe('amd');
    expect(inferGpuVendor('v6e-16')).toBe('google');
    expect(inferGpuVendor('Unknown')).toBeUndefined();
  });
});

describe('resources', () => {
  test('defaults: cpu 2.., memory 8GB.., gpu 0.., disk 100GB..', () => {
    expect(resourcesSpecSchema.parse({})).toEqual({
      cpu: { count: { min: 2, max: null } },
      memory: { min: 8, max: null },
      gpu: { count: { min: 0, max: null } },
      disk: { size: { min: 100, max: null } },
    });
  });

  test.each([
    ['arm:8', { arch: 'arm', count: { min: 8, max: 8 } }],
    ['x86:4..', { arch: 'x86', count: { min: 4, max: null } }],
    ['8', { count: { min: 8, max: 8 } }],
    [16, { count: { min: 16, max: 16 } }],
    ['2..8', { count: { min: 2, max: 8 } }],
    ['arm', { arch: 'arm', count: { min: 2, max: null } }],
    [
      { arch: 'arm', count: '4..' },
      { arch: 'arm', count: { min: 4, max: null } },
    ],
    [{ min: 2, max: 4 }, { count: { min: 2, max: 4 } }],
  ])('cpu %j', (input, expected) => {
    expect(resourcesSpecSchema.parse({ cpu: input }).cpu).toEqual(expected);
  });

  test('cpu, disk and shm_size forms', () => {
    expect(resourcesSpecSchema.safeParse({ cpu: 'risc:8' }).error?.issues[0]?.message).toContain(
      "invalid CPU spec 'risc:8'",
    );
    expect(resourcesSpecSchema.parse({ disk: '100GB..' }).disk).toEqual({ size: { min: 100, max: null } });
    expect(resourcesSpecSchema.parse({ disk: { size: '1TB' } }).disk).toEqual({
      size: { min: 1024, max: 1024 },
    });
    expect(resourcesSpecSchema.parse({ shm_size: '512MB' }).shm_size).toBe(0.5);
    expect(resourcesSpecSchema.parse({ gpu: { name: ['A100'], memory: '80GB..', count: 2 } }).gpu).toEqual({
      vendor: 'nvidia',
      name: ['A100'],
      memory: { min: 80, max: null },
      count: { min: 2, max: 2 },
    });
  });
});
