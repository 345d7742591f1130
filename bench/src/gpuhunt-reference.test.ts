import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gpuhuntQueryArguments, gpuhuntSourceOf } from './gpuhunt-reference.js';

describe('gpuhunt reference', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'gpuhunt-source-'));
  mkdirSync(path.join(root, 'src', 'gpuhunt', '_internal'), { recursive: true });
  writeFileSync(path.join(root, 'src', 'gpuhunt', '_internal', 'catalog.py'), '');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("maps the bench's filters to gpuhunt's keyword arguments and refuses an unmapped field", () => {
    expect(gpuhuntQueryArguments({ minGpuCount: 1, gpuName: ['A100'], spot: true, maxPrice: 3 })).toEqual({
      min_gpu_count: 1,
      gpu_name: ['A100'],
      spot: true,
      max_price: 3,
    });
    expect(() => gpuhuntQueryArguments({ cpuArch: 'arm' })).toThrow(/cpuArch/);
  });

  it('finds the gpuhunt package in a checkout or its src folder, none when not given', () => {
    expect(gpuhuntSourceOf([`--gpuhunt=${root}`], {})).toBe(path.join(root, 'src'));
    expect(gpuhuntSourceOf([], { GPUHUNT_SOURCE: path.join(root, 'src') })).toBe(path.join(root, 'src'));
    expect(gpuhuntSourceOf([], {})).toBeUndefined();
    expect(() => gpuhuntSourceOf([`--gpuhunt=${tmpdir()}`], {})).toThrow(/gpuhunt\/_internal\/catalog.py/);
  });
});
