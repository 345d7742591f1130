import { type CatalogItem, createCatalogItem, type QueryFilter } from '@dstack/catalog';
import { describe, expect, it } from 'vitest';
import {
  catalogItemToOffer,
  getCatalogOffers,
  type Requirements,
  RequirementsSchema,
  requirementsToQueryFilter,
  SUPPORTED_CATALOG_FLAGS,
} from './index.js';

const item: CatalogItem = createCatalogItem({
  provider: 'aws',
  instanceName: 'p4d.24xlarge',
  location: 'us-east-1',
  price: 32.7726,
  cpu: 96,
  memory: 1152,
  gpuCount: 8,
  gpuName: 'A100',
  gpuMemory: 40,
  gpuVendor: 'nvidia',
  providerData: { family: 'p4d' },
});

function requirements(resources: Record<string, unknown>, extra: Record<string, unknown> = {}): Requirements {
  return RequirementsSchema.parse({ resources: { cpu: { count: {} }, memory: {}, ...resources }, ...extra });
}

describe('requirementsToQueryFilter', () => {
  it('leaves everything open without requirements', () => {
    expect(requirementsToQueryFilter(undefined)).toEqual({ allowedFlags: SUPPORTED_CATALOG_FLAGS });
    expect(requirementsToQueryFilter(null, { provider: 'aws' })).toEqual({
      allowedFlags: SUPPORTED_CATALOG_FLAGS,
      provider: ['aws'],
    });
  });

  it('maps cpu, memory, disk, price and spot', () => {
    const filter = requirementsToQueryFilter(
      requirements(
        {
          cpu: { arch: 'arm', count: { min: 2, max: 8 } },
          memory: { min: 8, max: null },
          disk: { size: { min: 100, max: 500 } },
        },
        { max_price: 2.5, spot: false },
      ),
      { provider: ['gcp'] },
    );
    expect(filter).toEqual({
      allowedFlags: SUPPORTED_CATALOG_FLAGS,
      provider: ['gcp'],
      cpuArch: 'arm',
      minCpu: 2,
      maxCpu: 8,
      minMemory: 8,
      minDiskSize: 100,
      maxDiskSize: 500,
      maxPrice: 2.5,
      spot: false,
    } satisfies QueryFilter);
  });

  it('maps the GPU spec, with memory in GB = catalog GiB and compute capability', () => {
    const filter = requirementsToQueryFilter(
      requirements({
        gpu: {
          vendor: 'nvidia',
          name: ['A100', 'H100'],
          count: { min: 2, max: 8 },
          memory: { min: 40, max: 80 },
          total_memory: { min: 160 },
          compute_capability: '8.0',
        },
      }),
    );
    expect(filter).toMatchObject({
      gpuVendor: 'nvidia',
      gpuName: ['A100', 'H100'],
      minGpuCount: 2,
      maxGpuCount: 8,
      minGpuMemory: 40,
      maxGpuMemory: 80,
      minTotalGpuMemory: 160,
      minComputeCapability: [8, 0],
    });
    expect(filter).not.toHaveProperty('spot');
    expect(filter).not.toHaveProperty('maxTotalGpuMemory');
  });

  it('maps a zero GPU count (no GPU wanted)', () => {
    const filter = requirementsToQueryFilter(requirements({ gpu: { count: { min: 0, max: 0 } } }));
    expect(filter).toMatchObject({ minGpuCount: 0, maxGpuCount: 0 });
  });
});

describe('catalogItemToOffer', () => {
  it('converts GiB to MiB and repeats the GPU gpu_count times', () => {
    const offer = catalogItemToOffer(item, 'aws');
    expect(offer).toEqual({
      backend: 'aws',
      instance: {
        name: 'p4d.24xlarge',
        resources: {
          cpus: 96,
          memory_mib: 1152 * 1024,
          gpus: Array.from({ length: 8 }, () => ({ name: 'A100', memory_mib: 40960, vendor: 'nvidia' })),
          spot: false,
          disk: { size_mib: 100 * 1024 },
          cpu_arch: 'x86',
        },
      },
      region: 'us-east-1',
      price: 32.7726,
      backend_data: { family: 'p4d' },
    });
  });

  it('takes the disk from the item, else from the minimum of the disk requirement', () => {
    expect(catalogItemToOffer({ ...item, diskSize: 250 }, 'aws')?.instance.resources.disk.size_mib).toBe(
      250 * 1024,
    );
    const wanted = requirements({ disk: { size: { min: 200, max: 1000 } } });
    expect(catalogItemToOffer(item, 'aws', { requirements: wanted })?.instance.resources.disk.size_mib).toBe(
      200 * 1024,
    );
    // The requirement is clamped to what the backend can attach.
    expect(
      catalogItemToOffer(item, 'aws', {
        requirements: wanted,
        configurableDiskSize: { min: 300, max: 16384 },
      })?.instance.resources.disk.size_mib,
    ).toBe(300 * 1024);
    // No disk the backend can attach satisfies the requirement.
    expect(
      catalogItemToOffer(item, 'aws', {
        requirements: wanted,
        configurableDiskSize: { min: 2000, max: null },
      }),
    ).toBeNull();
  });

  it('gives a CPU-only item no GPUs and rounds fractional GiB', () => {
    const offer = catalogItemToOffer(
      { ...item, gpuCount: 0, gpuName: null, gpuMemory: null, gpuVendor: null, memory: 0.5, spot: true },
      'gcp',
    );
    expect(offer?.instance.resources).toMatchObject({ gpus: [], memory_mib: 512, spot: true });
  });
});

describe('getCatalogOffers', () => {
  it('queries the catalog with the provider and filters locations', async () => {
    const seen: QueryFilter[] = [];
    const catalog = {
      query(filter: QueryFilter) {
        seen.push(filter);
        return [item, { ...item, location: 'eu-west-1' }];
      },
    };
    const offers = await getCatalogOffers(catalog, 'lambda', { locations: ['us-east-1'] });
    expect(seen[0]?.provider).toEqual(['lambdalabs']);
    expect(offers.map((o) => o.region)).toEqual(['us-east-1']);
    expect(offers[0]?.backend).toBe('lambda');
    const none = await getCatalogOffers(catalog, 'aws', { extraFilter: () => false });
    expect(none).toEqual([]);
  });
});
