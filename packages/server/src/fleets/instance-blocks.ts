/**
 * Fleet `blocks` (dstack's offer sharing): an instance split into N blocks runs several jobs at
 * once, each on a share of 1..N blocks whose GPUs, CPUs and memory are the instance's × blocks/N.
 * The disk is not split: every share sees all of it, as in dstack.
 */
import type { InstanceOfferWithAvailability, JobRuntimeData, Requirements } from '@dstack/core';
import { instanceOfferOf, jobRuntimeDataColumn } from '../db/json-columns.js';
import type { InstancesTable, JobsTable } from '../db/schema.js';
import { offerSatisfies } from './instance-matching.js';

/** A fleet's or SSH host's `blocks`: a count, or `auto`. */
export type BlocksSetting = number | 'auto';

/** The counts a split must divide: an instance's CPUs and GPUs. */
export interface DivisibleResources {
  cpus: number;
  gpus: ReadonlyArray<{ vendor?: string | null }>;
}

/**
 * How many blocks an instance with `resources` splits into for `blocks` (dstack's
 * `is_divisible_into_blocks`): `auto` is one per GPU (bounded by the CPUs), or one per CPU
 * without GPUs. TPUs count as one GPU: they cannot be shared. Null when the CPUs or GPUs do
 * not divide evenly.
 */
export function totalBlocksFor(blocks: BlocksSetting, resources: DivisibleResources): number | null {
  const cpus = resources.cpus;
  const gpus = resources.gpus[0]?.vendor === 'google' ? 1 : resources.gpus.length;
  const wanted = blocks === 'auto' ? (gpus === 0 ? cpus : Math.min(cpus, gpus)) : blocks;
  if (wanted < 1 || cpus % wanted !== 0 || gpus % wanted !== 0) return null;
  return wanted;
}

/**
 * `offers` that an instance split into `blocks` can be made of, each with its `total_blocks`
 * set; offers that do not divide evenly are left out (dstack's `_get_shareable_offers`).
 */
export function shareableOffers<Entry extends { offer: InstanceOfferWithAvailability }>(
  entries: readonly Entry[],
  blocks: BlocksSetting,
): Entry[] {
  if (blocks === 1) return [...entries];
  return entries.flatMap((entry) => {
    const totalBlocks = totalBlocksFor(blocks, entry.offer.instance.resources);
    return totalBlocks === null ? [] : [{ ...entry, offer: { ...entry.offer, total_blocks: totalBlocks } }];
  });
}

/** The share of `blocks` out of `totalBlocks` of an instance's offer (dstack's `generate_shared_offer`). */
export function sharedOffer(
  offer: InstanceOfferWithAvailability,
  blocks: number,
  totalBlocks: number,
): InstanceOfferWithAvailability {
  const resources = offer.instance.resources;
  return {
    ...offer,
    instance: {
      ...offer.instance,
      resources: {
        ...resources,
        cpus: Math.floor(resources.cpus / totalBlocks) * blocks,
        memory_mib: Math.floor(resources.memory_mib / totalBlocks) * blocks,
        gpus: resources.gpus.slice(0, Math.floor(resources.gpus.length / totalBlocks) * blocks),
      },
    },
    blocks,
    total_blocks: totalBlocks,
  };
}

/**
 * The smallest share of an instance that satisfies `requirements`, when it fits in `freeBlocks`;
 * null when no share satisfies them or the smallest one needs more blocks than are free
 * (a larger share would only waste blocks). A multinode job takes the whole instance.
 */
export function smallestFittingShare(
  offer: InstanceOfferWithAvailability,
  totalBlocks: number,
  freeBlocks: number,
  requirements: Requirements,
): InstanceOfferWithAvailability | null {
  const fewest = requirements.multinode ? totalBlocks : 1;
  for (let blocks = fewest; blocks <= totalBlocks; blocks++) {
    const share = sharedOffer(offer, blocks, totalBlocks);
    if (offerSatisfies(share, requirements)) return blocks <= freeBlocks ? share : null;
  }
  return null;
}

/** `range` without its upper bound: a larger instance may still have a share that fits. */
function atLeast<Value extends { min?: number | null; max?: number | null } | null | undefined>(
  range: Value,
): Value {
  return range ? { ...range, max: null } : range;
}

/**
 * The requirements to ask backends with for an instance split into blocks, for a job: the
 * instance may be larger than the job (only its share must fit), so the upper bounds of the
 * counts and sizes that are split are dropped. Each offer is then kept only if a share fits
 * (`offersWithFittingShare`).
 */
export function requirementsForSplitInstance(requirements: Requirements): Requirements {
  const resources = requirements.resources;
  return {
    ...requirements,
    resources: {
      ...resources,
      cpu: { ...resources.cpu, count: atLeast(resources.cpu.count) },
      memory: atLeast(resources.memory),
      gpu: resources.gpu
        ? {
            ...resources.gpu,
            count: atLeast(resources.gpu.count),
            total_memory: atLeast(resources.gpu.total_memory),
          }
        : resources.gpu,
    },
  };
}

/** `entries` (offers split into blocks) of which a share satisfies `requirements`. */
export function offersWithFittingShare<Entry extends { offer: InstanceOfferWithAvailability }>(
  entries: readonly Entry[],
  requirements: Requirements,
): Entry[] {
  return entries.filter((entry) => {
    const totalBlocks = entry.offer.total_blocks ?? 1;
    return smallestFittingShare(entry.offer, totalBlocks, totalBlocks, requirements) !== null;
  });
}

/**
 * The share a job takes of an instance launched for it: the smallest that satisfies it (the
 * rest stays free for other jobs), or the whole instance.
 */
export function shareOfNewInstance(
  offer: InstanceOfferWithAvailability,
  requirements: Requirements,
): InstanceOfferWithAvailability {
  // A plugin's offer may leave blocks out: such an instance is one block.
  const totalBlocks = offer.total_blocks ?? 1;
  return (
    smallestFittingShare(offer, totalBlocks, totalBlocks, requirements) ??
    sharedOffer(offer, totalBlocks, totalBlocks)
  );
}

/**
 * The share a job took of an instance launched for it, from the offer stored with the launch
 * (the blocks the launch counted for it); null when no offer was stored.
 */
export function shareOfLaunchedInstance(
  instance: Pick<InstancesTable, 'id' | 'offer' | 'total_blocks'>,
  requirements: Requirements,
): InstanceOfferWithAvailability | null {
  const offer = instanceOfferOf(instance);
  if (offer === null) return null;
  return shareOfNewInstance({ ...offer, total_blocks: instance.total_blocks }, requirements);
}

/**
 * The job's runtime data before it starts (dstack's `_prepare_job_runtime_data`): a job on part
 * of an instance is limited to its share's GPUs, CPUs and memory; a job on a whole instance has
 * no limits. Host networking either way: every runner gets a port of its own from the shim.
 */
export function runtimeDataForShare(share: InstanceOfferWithAvailability): JobRuntimeData {
  const whole = share.blocks >= share.total_blocks;
  const resources = share.instance.resources;
  return {
    network_mode: 'host',
    gpu: whole ? null : resources.gpus.length,
    cpu: whole ? null : resources.cpus,
    memory: whole ? null : resources.memory_mib / 1024,
    ports: null,
    offer: share,
  };
}

/** The blocks a job holds, from its runtime data; 1 for jobs placed before blocks were recorded. */
export function blocksHeldBy(jobRuntimeData: JobsTable['job_runtime_data'], jobId = '(unnamed)'): number {
  return jobRuntimeDataColumn.decodeNullable(jobRuntimeData, jobId)?.offer?.blocks ?? 1;
}
