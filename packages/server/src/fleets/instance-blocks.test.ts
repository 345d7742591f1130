import {
  type InstanceOfferWithAvailability,
  parseConfiguration,
  type Requirements,
  RequirementsSchema,
} from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  blocksHeldBy,
  offersWithFittingShare,
  requirementsForSplitInstance,
  runtimeDataForShare,
  shareableOffers,
  sharedOffer,
  smallestFittingShare,
  totalBlocksFor,
} from './instance-blocks.js';

const A100 = { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' as const };

function offerOf(
  cpus: number,
  memoryGib: number,
  gpus: number,
  totalBlocks = 1,
): InstanceOfferWithAvailability {
  return {
    backend: 'fake',
    instance: {
      name: `host-${cpus}-${gpus}`,
      resources: {
        cpus,
        memory_mib: memoryGib * 1024,
        gpus: Array.from({ length: gpus }, () => A100),
        spot: false,
        disk: { size_mib: 500 * 1024 },
      },
    },
    region: 'r',
    price: 1,
    backend_data: {},
    availability: 'available',
    availability_zones: null,
    instance_runtime: 'shim',
    blocks: totalBlocks,
    total_blocks: totalBlocks,
  };
}

/** The requirements of a task with `resources` (YAML lines under `resources:`). */
function requirementsFor(resources: string, multinode = false): Requirements {
  const configuration = parseConfiguration(`type: task\ncommands: [x]\nresources:\n${resources}\n`);
  if (configuration.type !== 'task') throw new Error('expected a task');
  return RequirementsSchema.parse({ resources: configuration.resources, spot: null, multinode });
}

const ONE_GPU = requirementsFor('  gpu: 1\n  cpu: 1..\n  memory: 1GB..');
const TWO_GPUS = requirementsFor('  gpu: 2\n  cpu: 1..\n  memory: 1GB..');

describe('totalBlocksFor', () => {
  it('makes auto one block per GPU, or per CPU without GPUs', () => {
    expect(totalBlocksFor('auto', offerOf(128, 2048, 8).instance.resources)).toBe(8);
    expect(totalBlocksFor('auto', offerOf(4, 16, 0).instance.resources)).toBe(4);
    // Never more blocks than CPUs.
    expect(totalBlocksFor('auto', offerOf(2, 16, 4).instance.resources)).toBe(2);
  });

  it('refuses a split that does not divide the CPUs and GPUs evenly', () => {
    expect(totalBlocksFor(4, offerOf(16, 64, 4).instance.resources)).toBe(4);
    expect(totalBlocksFor(3, offerOf(16, 64, 4).instance.resources)).toBeNull();
    expect(totalBlocksFor(4, offerOf(6, 64, 4).instance.resources)).toBeNull();
  });

  it('counts TPUs as one device: they are not split', () => {
    const tpu = { name: 'v5litepod-8', memory_mib: 16 * 1024, vendor: 'google' as const };
    expect(totalBlocksFor('auto', { cpus: 8, gpus: [tpu, tpu, tpu, tpu] })).toBe(1);
    expect(totalBlocksFor(2, { cpus: 8, gpus: [tpu, tpu] })).toBeNull();
  });
});

describe('shares of an instance', () => {
  it('gives a share GPUs, CPUs and memory in proportion, and the whole disk', () => {
    const share = sharedOffer(offerOf(128, 2048, 8), 2, 8);
    expect(share.instance.resources).toMatchObject({
      cpus: 32,
      memory_mib: 512 * 1024,
      disk: { size_mib: 500 * 1024 },
    });
    expect(share.instance.resources.gpus).toHaveLength(2);
    expect(share).toMatchObject({ blocks: 2, total_blocks: 8 });
  });

  it('takes the fewest blocks that satisfy the job, and none when they are not free', () => {
    const instance = offerOf(16, 64, 4, 4);
    expect(smallestFittingShare(instance, 4, 4, ONE_GPU)?.blocks).toBe(1);
    expect(smallestFittingShare(instance, 4, 4, TWO_GPUS)?.blocks).toBe(2);
    expect(smallestFittingShare(instance, 4, 1, TWO_GPUS)).toBeNull();
    // 8 GPUs never fit in 4.
    expect(smallestFittingShare(instance, 4, 4, requirementsFor('  gpu: 8'))).toBeNull();
  });

  it('gives a multinode job the whole instance', () => {
    const multinode = requirementsFor('  gpu: 1..\n  cpu: 1..\n  memory: 1GB..', true);
    expect(smallestFittingShare(offerOf(16, 64, 4, 4), 4, 4, multinode)?.blocks).toBe(4);
    expect(smallestFittingShare(offerOf(16, 64, 4, 4), 4, 3, multinode)).toBeNull();
  });

  it('limits a job on part of an instance to its share, and not a job on all of it', () => {
    expect(runtimeDataForShare(sharedOffer(offerOf(16, 64, 4), 1, 4))).toMatchObject({
      network_mode: 'host',
      gpu: 1,
      cpu: 4,
      memory: 16,
    });
    expect(runtimeDataForShare(sharedOffer(offerOf(16, 64, 4), 4, 4))).toMatchObject({
      gpu: null,
      cpu: null,
      memory: null,
    });
  });

  it('reads the blocks a job holds from its runtime data, 1 when it has none', () => {
    const share = sharedOffer(offerOf(16, 64, 4), 3, 4);
    expect(blocksHeldBy(JSON.stringify(runtimeDataForShare(share)))).toBe(3);
    expect(blocksHeldBy(JSON.stringify({ network_mode: 'host', offer: null }))).toBe(1);
    expect(blocksHeldBy(null)).toBe(1);
  });
});

describe('offers for a fleet split into blocks', () => {
  it('keeps the offers that divide, with their total blocks', () => {
    const entries = [{ offer: offerOf(16, 64, 4) }, { offer: offerOf(6, 64, 4) }];
    expect(shareableOffers(entries, 4).map((entry) => entry.offer.total_blocks)).toEqual([4]);
    expect(shareableOffers(entries, 1)).toEqual(entries);
  });

  it('asks backends for instances larger than the job and keeps those with a share that fits', () => {
    const widened = requirementsForSplitInstance(ONE_GPU);
    expect(widened.resources.gpu?.count).toEqual({ min: 1, max: null });
    const entries = shareableOffers([{ offer: offerOf(16, 64, 4) }, { offer: offerOf(16, 64, 2) }], 'auto');
    // Split one block per GPU, both hosts have a one-GPU share; only the 4-GPU one has a 3-GPU share.
    expect(offersWithFittingShare(entries, ONE_GPU)).toHaveLength(2);
    expect(offersWithFittingShare(entries, requirementsFor('  gpu: 3'))).toHaveLength(1);
  });
});
