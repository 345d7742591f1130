import { type Requirements, RequirementsSchema } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import type { HostResources } from './host-resources.js';
import { hostShortages, type LiveLocalInstance } from './local-capacity.js';
import { explainOfferMismatch, getLocalOffers } from './local-offers.js';

const CPU_HOST: HostResources = { cpuCount: 8, cpuArch: 'x86', memoryGib: 31.3, diskGib: 250, gpus: [] };
const GPU_HOST: HostResources = {
  ...CPU_HOST,
  gpus: [
    { name: 'A100', memoryGib: 80, vendor: 'nvidia' },
    { name: 'A100', memoryGib: 80, vendor: 'nvidia' },
  ],
};

function requirements(
  resources: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Requirements {
  return RequirementsSchema.parse({
    resources: { cpu: { count: { min: 2 } }, memory: { min: 8 }, disk: { size: { min: 100 } }, ...resources },
    ...extra,
  });
}

describe('getLocalOffers', () => {
  it('offers the share of the host the job asks for, then the whole host, free and available', () => {
    const offers = getLocalOffers(requirements(), CPU_HOST);

    const offerOf = (cpus: number, memoryMib: number) => ({
      backend: 'local',
      instance: {
        name: 'local',
        resources: {
          cpus,
          memory_mib: memoryMib,
          gpus: [],
          spot: false,
          disk: { size_mib: 250 * 1024 },
          cpu_arch: 'x86',
        },
      },
      region: 'local',
      price: 0,
      backend_data: {},
      availability: 'available',
      availability_zones: null,
      instance_runtime: 'shim',
      blocks: 1,
      total_blocks: 1,
    });
    expect(offers).toEqual([offerOf(2, 8 * 1024), offerOf(8, Math.round(31.3 * 1024))]);
  });

  it('offers one instance when the share is the whole host, and none larger than the bounds', () => {
    const whole = getLocalOffers(
      requirements({ cpu: { count: { min: 8 } }, memory: { min: 31.3 } }),
      CPU_HOST,
    );
    expect(whole.map((offer) => offer.instance.resources.cpus)).toEqual([8]);

    const bounded = getLocalOffers(requirements({ cpu: { count: { min: 1, max: 4 } } }), CPU_HOST);
    expect(bounded.map((offer) => offer.instance.resources.cpus)).toEqual([1]);
  });

  describe('on a host of 2 CPUs that its instances partly hold', () => {
    const TWO_CPUS: HostResources = { cpuCount: 2, cpuArch: 'x86', memoryGib: 32, diskGib: 500, gpus: [] };
    // `cpu: 1..` with dstack's default memory, `8GB..`.
    const oneCpuUp = requirements({ cpu: { count: { min: 1 } }, memory: { min: 8 } });
    const instanceOf = (cpus: number, memoryGib: number, gpuIds: string[] = []): LiveLocalInstance => ({
      home: `/instances/${cpus}-${memoryGib}`,
      cpus,
      memoryMib: memoryGib * 1024,
      gpuIds,
    });
    const summary = (offers: ReturnType<typeof getLocalOffers>) =>
      offers.map((offer) => ({
        cpus: offer.instance.resources.cpus,
        memoryGib: offer.instance.resources.memory_mib / 1024,
        availability: offer.availability,
      }));

    it('offers a `cpu: 1..` job the lower bounds of its ranges, available on an empty host', () => {
      expect(summary(getLocalOffers(oneCpuUp, TWO_CPUS, []))).toEqual([
        { cpus: 1, memoryGib: 8, availability: 'available' },
        { cpus: 2, memoryGib: 32, availability: 'available' },
      ]);
    });

    it('keeps the share available beside an instance of one CPU, and the whole host busy', () => {
      expect(summary(getLocalOffers(oneCpuUp, TWO_CPUS, [instanceOf(1, 8)]))).toEqual([
        { cpus: 1, memoryGib: 8, availability: 'available' },
        { cpus: 2, memoryGib: 32, availability: 'busy' },
      ]);
    });

    it('marks every offer busy once the CPUs or the memory are taken', () => {
      const cpusTaken = getLocalOffers(oneCpuUp, TWO_CPUS, [instanceOf(1, 8), instanceOf(1, 8)]);
      expect(cpusTaken.map((offer) => offer.availability)).toEqual(['busy', 'busy']);
      const memoryTaken = getLocalOffers(oneCpuUp, TWO_CPUS, [instanceOf(1, 28)]);
      expect(memoryTaken.map((offer) => offer.availability)).toEqual(['busy', 'busy']);
    });

    it('counts GPUs as whole devices', () => {
      const gpuHost: HostResources = { ...TWO_CPUS, gpus: GPU_HOST.gpus };
      const oneGpu = requirements({
        cpu: { count: { min: 1 } },
        memory: { min: 1 },
        gpu: { count: { min: 1 } },
      });
      const offers = getLocalOffers(oneGpu, gpuHost, [instanceOf(1, 1, ['0'])]);
      expect(offers.map((offer) => [offer.instance.resources.gpus.length, offer.availability])).toEqual([
        [1, 'available'],
        [2, 'busy'],
      ]);
    });
  });

  describe('hostShortages', () => {
    const host: HostResources = { cpuCount: 2, cpuArch: 'x86', memoryGib: 16, diskGib: 500, gpus: [] };
    const share = (cpus: number, memoryGib: number) => ({
      cpus,
      memory_mib: memoryGib * 1024,
      gpus: [],
      spot: false,
      disk: { size_mib: 0 },
    });

    it('names each resource the host lacks beside the live instances', () => {
      const live = [{ home: '/a', cpus: 1, memoryMib: 8 * 1024, gpuIds: [] }];
      expect(hostShortages(host, live, share(1, 8))).toEqual([]);
      expect(hostShortages(host, live, share(2, 9))).toEqual([
        '2 CPUs, 1 of 2 are free',
        '9GB of memory, 8GB of 16GB is free',
      ]);
    });
  });

  it('gives a GPU job whole GPUs, as many as it asks, and a CPU job none', () => {
    const two = getLocalOffers(requirements({ gpu: { count: { min: 2 } } }), {
      ...GPU_HOST,
      gpus: [...GPU_HOST.gpus, ...GPU_HOST.gpus],
    });
    expect(two.map((offer) => offer.instance.resources.gpus.length)).toEqual([2, 4]);

    const named = getLocalOffers(
      requirements({ gpu: { name: ['A100'], count: { min: 1, max: 1 } } }),
      GPU_HOST,
    );
    expect(named[0]?.instance.resources.gpus).toEqual([
      { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' },
    ]);

    const none = getLocalOffers(requirements(), GPU_HOST);
    expect(none[0]?.instance.resources.gpus).toEqual([]);
  });

  it('lists each GPU of the host', () => {
    const [offer] = getLocalOffers(requirements({ gpu: { name: ['a100'], count: { min: 2 } } }), GPU_HOST);

    expect(offer?.instance.resources.gpus).toEqual([
      { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' },
      { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' },
    ]);
  });

  it.each([
    ['a GPU on a GPU-less host', requirements({ gpu: { count: { min: 1 } } }), CPU_HOST],
    ['more memory', requirements({ memory: { min: 512 } }), CPU_HOST],
    ['more CPUs', requirements({ cpu: { count: { min: 16 } } }), CPU_HOST],
    ['another architecture', requirements({ cpu: { arch: 'arm', count: { min: 1 } } }), CPU_HOST],
    ['another GPU model', requirements({ gpu: { name: ['H100'], count: { min: 1 } } }), GPU_HOST],
    ['spot', requirements({}, { spot: true }), CPU_HOST],
  ])('offers nothing when the job needs %s', (_what, wanted, host) => {
    expect(getLocalOffers(wanted, host)).toEqual([]);
    expect(explainOfferMismatch(wanted, host)).not.toEqual([]);
  });
});

describe('explainOfferMismatch', () => {
  it('explains each unmet dimension', () => {
    const wanted = requirements({ gpu: { count: { min: 1 } }, memory: { min: 512 } });

    expect(explainOfferMismatch(wanted, CPU_HOST)).toEqual([
      'memory: requires 512GB.., the host has 31.3GB',
      'gpu: requires 1..∞ GPUs, the host has 0',
    ]);
  });

  it('names the GPU model and the architecture', () => {
    expect(
      explainOfferMismatch(requirements({ gpu: { name: ['H100', 'H200'], count: { min: 1 } } }), GPU_HOST),
    ).toEqual(['gpu: requires H100 or H200, the host has A100']);
    expect(
      explainOfferMismatch(requirements({ cpu: { arch: 'arm', count: { min: 16, max: 32 } } }), CPU_HOST),
    ).toEqual([
      'cpu: requires the arm architecture, the host is x86',
      'cpu: requires 16..32 CPUs, the host has 8',
    ]);
  });

  it('does not hold upper bounds against the host: an instance takes a share of it', () => {
    expect(explainOfferMismatch(requirements({ cpu: { count: { min: 1, max: 4 } } }), CPU_HOST)).toEqual([]);
  });

  it('is empty when the host fits', () => {
    expect(explainOfferMismatch(requirements({ gpu: { count: { min: 0 } } }), CPU_HOST)).toEqual([]);
  });
});
