import { describe, expect, it } from 'vitest';
import type { VastAiOffer } from './vastai-api.js';
import { fromVastAiGpuName, toVastAiGpuNames } from './vastai-gpu-names.js';
import {
  buildSearchBody,
  offerToCatalogItems,
  satisfiesSearchBody,
  VAST_AI_QUALITY_FILTERS,
  vastAiLocation,
} from './vastai-offers.js';

/** An ask as Vast.ai's search returns it (fields trimmed to those read). */
const ask: VastAiOffer = {
  id: 1234567,
  machine_id: 42,
  gpu_name: 'RTX 4090',
  num_gpus: 2,
  gpu_ram: 24564,
  cpu_cores: 32,
  cpu_cores_effective: 16,
  cpu_ram: 128000,
  disk_space: 500,
  dph_base: 0.8,
  dph_total: 0.85,
  storage_cost: 0.1,
  min_bid: 0.3,
  geolocation: 'Hong Kong, HK',
  reliability2: 0.99,
  verified: true,
  cuda_max_good: 12.8,
  direct_port_count: 10,
  rentable: true,
  rented: false,
};

describe('Vast.ai GPU names', () => {
  it('maps dstack names to Vast.ai names as gpuhunt', () => {
    expect(toVastAiGpuNames('A100')).toEqual(['A100 PCIE', 'A100 SXM4']);
    expect(toVastAiGpuNames('H100')).toEqual(['H100 PCIE', 'H100 SXM']);
    expect(toVastAiGpuNames('L40S')).toEqual(['L40S']);
    expect(toVastAiGpuNames('T4')).toEqual(['Tesla T4']);
    expect(toVastAiGpuNames('RTX4090')).toEqual(['RTX 4090']);
    expect(toVastAiGpuNames('RTX4090Ti')).toEqual(['RTX 4090 Ti']);
    expect(toVastAiGpuNames('RTX6000Ada')).toEqual(['RTX 6000Ada']);
    expect(toVastAiGpuNames('QRTX8000')).toEqual(['Q RTX 8000']);
    expect(toVastAiGpuNames('A5000')).toEqual(['RTX A5000']);
    expect(toVastAiGpuNames('MI300X')).toEqual([]);
  });

  it('maps Vast.ai names back to dstack names', () => {
    expect(fromVastAiGpuName('A100 SXM4')).toBe('A100');
    expect(fromVastAiGpuName('H100 SXM')).toBe('H100');
    expect(fromVastAiGpuName('H100 NVL')).toBe('H100NVL');
    expect(fromVastAiGpuName('Tesla V100')).toBe('V100');
    expect(fromVastAiGpuName('RTX A5000')).toBe('A5000');
    expect(fromVastAiGpuName('RTX 4090')).toBe('RTX4090');
    expect(fromVastAiGpuName('Q RTX 8000')).toBe('QRTX8000');
  });
});

describe('Vast.ai search body', () => {
  it('turns a catalog filter into gpuhunt’s body (MB of RAM, GPU memory margins, compute capability)', () => {
    const body = buildSearchBody(
      {
        minCpu: 4,
        minMemory: 32,
        minGpuCount: 1,
        gpuName: ['A100'],
        minGpuMemory: 80,
        maxPrice: 2,
        minComputeCapability: [8, 0],
        minDiskSize: 100,
      },
      { communityCloud: false, extraFilters: VAST_AI_QUALITY_FILTERS },
    );

    expect(body).toEqual({
      cpu_cores: { gte: 4 },
      cpu_ram: { gte: 32000 },
      num_gpus: { gte: 1 },
      gpu_name: { in: ['A100 PCIE', 'A100 SXM4'] },
      gpu_ram: { gte: 80 * 1024 * 0.93 },
      disk_space: { gte: 100 },
      dph_total: { lte: 2 },
      compute_capability: { gte: '800' },
      datacenter: { eq: true },
      rentable: { eq: true },
      rented: { eq: false },
      reliability2: { gte: 0.9 },
      verified: { eq: true },
      cuda_max_good: { gte: 12.8 },
      direct_port_count: { gte: 1 },
      order: [['score', 'desc']],
    });
  });

  it('asks for every GPU when no name maps, and leaves out datacenter for the community cloud', () => {
    const body = buildSearchBody({ gpuName: ['MI300X'] });

    expect(body.gpu_name).toBeUndefined();
    expect(body.limit).toBe(3000);
    expect(body.datacenter).toBeUndefined();
  });

  it('re-checks an ask against the body (the search is loose)', () => {
    const body = buildSearchBody(
      { minCpu: 8, gpuName: ['RTX4090'] },
      { extraFilters: VAST_AI_QUALITY_FILTERS },
    );

    expect(satisfiesSearchBody(ask, body)).toBe(true);
    expect(satisfiesSearchBody({ ...ask, cpu_cores: 4 }, body)).toBe(false);
    expect(satisfiesSearchBody({ ...ask, gpu_name: 'RTX 3090' }, body)).toBe(false);
    expect(satisfiesSearchBody({ ...ask, reliability2: 0.5 }, body)).toBe(false);
    expect(satisfiesSearchBody({ ...ask, rented: true }, body)).toBe(false);
  });
});

describe('Vast.ai asks as catalog rows', () => {
  it('prices the disk in, adds a spot row at the minimum bid, cheapest first', () => {
    const [spot, onDemand] = offerToCatalogItems(ask, { minDiskSize: 100 });
    const diskCost = (100 * 0.1) / 720;

    expect(onDemand).toMatchObject({
      provider: 'vastai',
      instanceName: '1234567',
      location: 'hk-hongkong',
      price: Math.round((0.8 + diskCost) * 1e5) / 1e5,
      cpu: 16,
      memory: 64,
      gpuCount: 2,
      gpuName: 'RTX4090',
      gpuMemory: 24,
      gpuVendor: 'nvidia',
      spot: false,
      diskSize: 100,
      providerData: { ask_id: 1234567, min_bid: 0.3 },
    });
    expect(spot).toMatchObject({ spot: true, price: Math.round((0.3 + diskCost) * 1e5) / 1e5 });
  });

  it('gives on-demand only without a minimum bid, the host disk without a disk filter, nothing without CPUs', () => {
    const rows = offerToCatalogItems({ ...ask, min_bid: null }, {});

    expect(rows).toHaveLength(1);
    expect(rows[0]?.diskSize).toBe(500);
    expect(offerToCatalogItems({ ...ask, cpu_cores: null }, {})).toEqual([]);
  });

  it('names locations as gpuhunt', () => {
    expect(vastAiLocation('Czechia, CZ')).toBe('cz-czechia');
    expect(vastAiLocation('Sweden')).toBe('sweden');
    expect(vastAiLocation(null)).toBe('');
  });
});
