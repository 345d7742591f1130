import type { Gpu, InstanceOffer } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { collapseZones, isSupportedOffer, offerWithQuota } from './gcp-offers.js';

const gpu = (name: string, memoryGib: number, vendor: Gpu['vendor'] = 'nvidia'): Gpu => ({
  name,
  memory_mib: memoryGib * 1024,
  vendor,
});

function offer(name: string, zone: string, price: number, gpus: Gpu[], spot = false): InstanceOffer {
  return {
    backend: 'gcp',
    instance: {
      name,
      resources: {
        cpus: 4,
        memory_mib: 15 * 1024,
        gpus,
        spot,
        disk: { size_mib: 100 * 1024 },
        cpu_arch: 'x86',
      },
    },
    region: zone,
    price,
    backend_data: {},
  } as InstanceOffer;
}

describe('supported offers', () => {
  it('leaves TPUs out', () => {
    expect(isSupportedOffer(offer('v2-8', 'us-central1-b', 1.35, [gpu('v2-8', 64, 'google')]))).toBe(false);
    expect(isSupportedOffer(offer('n1-standard-4', 'us-central1-a', 0.5, [gpu('T4', 16)]))).toBe(true);
    expect(isSupportedOffer(offer('e2-standard-2', 'us-central1-a', 0.07, []))).toBe(true);
  });
});

describe('collapseZones', () => {
  it('makes one offer per type, GPUs, market and region, zones cheapest first', () => {
    const collapsed = collapseZones([
      offer('n1-standard-4', 'us-central1-c', 0.5, [gpu('T4', 16)]),
      offer('n1-standard-4', 'us-central1-a', 0.5, [gpu('T4', 16)]),
      offer('n1-standard-4', 'us-central1-b', 0.55, [gpu('T4', 16)]),
      offer('n1-standard-4', 'us-central1-a', 0.6, [gpu('V100', 16)]),
      offer('n1-standard-4', 'us-central1-a', 0.2, [gpu('T4', 16)], true),
      offer('n1-standard-4', 'europe-west4-b', 0.52, [gpu('T4', 16)]),
    ]);

    expect(
      collapsed.map(({ offer: each, zones }) => [
        each.instance.resources.gpus[0]?.name,
        each.instance.resources.spot,
        each.region,
        each.price,
        zones,
      ]),
    ).toEqual([
      ['T4', false, 'us-central1', 0.5, ['us-central1-c', 'us-central1-a', 'us-central1-b']],
      ['V100', false, 'us-central1', 0.6, ['us-central1-a']],
      ['T4', true, 'us-central1', 0.2, ['us-central1-a']],
      ['T4', false, 'europe-west4', 0.52, ['europe-west4-b']],
    ]);
  });

  it('is no_quota when the free GPUs of the metric are fewer than the offer needs', () => {
    const twoT4 = offer('n1-standard-8', 'us-central1', 1, [gpu('T4', 16), gpu('T4', 16)]);
    const quotas = (limit: number, usage: number) =>
      new Map([['NVIDIA_T4_GPUS', { metric: 'NVIDIA_T4_GPUS', limit, usage }]]);

    expect(offerWithQuota(twoT4, ['us-central1-a'], quotas(4, 2)).availability).toBe('available');
    expect(offerWithQuota(twoT4, ['us-central1-a'], quotas(4, 3)).availability).toBe('no_quota');
    expect(offerWithQuota(twoT4, ['us-central1-a'], new Map()).availability).toBe('no_quota');
    expect(offerWithQuota(twoT4, ['us-central1-a'], undefined).availability).toBe('available');
    expect(offerWithQuota(twoT4, ['us-central1-a'], undefined).availability_zones).toEqual(['us-central1-a']);
  });
});
