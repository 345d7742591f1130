import { describe, expect, it } from 'vitest';
import { createCatalogItem } from './catalog-item.js';

const required = {
  provider: 'aws',
  instanceName: 'm7i.large',
  location: 'us-east-1',
  price: 0.1008,
  cpu: 2,
  memory: 8,
};

describe('createCatalogItem', () => {
  it("fills omitted fields with gpuhunt's CatalogItem defaults", () => {
    expect(createCatalogItem(required)).toEqual({
      ...required,
      gpuCount: 0,
      gpuName: null,
      gpuMemory: null,
      spot: false,
      diskSize: null,
      gpuVendor: null,
      flags: [],
      cpuArch: 'x86',
      providerData: {},
    });
  });

  it('gives every item its own flags and provider data', () => {
    const first = createCatalogItem(required);
    const second = createCatalogItem(required);
    expect(first.flags).not.toBe(second.flags);
    expect(first.providerData).not.toBe(second.providerData);
  });

  it('keeps given values, including a vendor that differs from the known one', () => {
    const init = {
      ...required,
      gpuCount: 8,
      gpuName: 'A100',
      gpuMemory: 80,
      spot: true,
      diskSize: 500,
      gpuVendor: 'amd',
      flags: ['f1'],
      cpuArch: 'arm',
      providerData: { zone: 'a' },
    } as const;
    const item = createCatalogItem({ ...init, flags: [...init.flags] });
    expect(item).toEqual(init);
  });

  it('infers the vendor of a known GPU name, case-insensitively', () => {
    const gpu = { ...required, gpuCount: 1, gpuMemory: 16 };
    expect(createCatalogItem({ ...gpu, gpuName: 't4' }).gpuVendor).toBe('nvidia');
    expect(createCatalogItem({ ...gpu, gpuName: 'MI300X' }).gpuVendor).toBe('amd');
    expect(createCatalogItem({ ...gpu, gpuName: 'v5litepod', gpuVendor: null }).gpuVendor).toBe('google');
  });

  it('leaves the vendor null without GPUs, even for a known name', () => {
    expect(createCatalogItem({ ...required, gpuName: 'T4' }).gpuVendor).toBeNull();
  });

  it('throws, naming the instance, when GPUs have no vendor to give or infer', () => {
    expect(() => createCatalogItem({ ...required, gpuCount: 1, gpuName: 'X999' })).toThrow(
      /m7i\.large.*gpuVendor.*"X999"/,
    );
    expect(() => createCatalogItem({ ...required, gpuCount: 2 })).toThrow(/m7i\.large.*no name/);
  });
});
