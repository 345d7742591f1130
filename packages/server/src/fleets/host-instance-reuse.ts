/**
 * Reusing an idle instance on a backend whose instances share the server's own host (the local
 * backend, `runsOnServerHost`). Such an instance holds its share of the host whether a job uses
 * all of it or not: an idle instance of the whole host, reused by a job of one CPU, would keep
 * every other job off the host while that job runs. So a job takes such an instance only when
 * the instance holds no more than the job asks for (the lower bound of each range); a larger one
 * makes room instead (`makeRoomOnHost` ends it) and the job gets an instance of its own size.
 * Instances split into blocks are shared by their blocks already, and an instance its fleet
 * keeps (`nodes.min`) cannot make room: both are reused as any fleet instance is.
 */
import type { InstanceOfferWithAvailability, Range, Requirements } from '@dstack/core';
import type { AppContext } from '../context.js';
import { instanceOfferOf } from '../db/json-columns.js';
import type { InstancesTable } from '../db/schema.js';
import { fleetKeepsInstance } from './fleet-rows.js';
import { offerSatisfies } from './instance-matching.js';

/** Whether instances of backend `type` share the server's host (the local backend). */
export async function sharesServerHost(app: AppContext, type: string): Promise<boolean> {
  const plugin = await app.backends.getPlugin(type).catch(() => undefined);
  return plugin?.runsOnServerHost === true;
}

/** `range` capped at its lower bound: the least that satisfies it; unchanged without one. */
function lowerBoundOnly(range: Range | null | undefined): Range | null | undefined {
  return range?.min != null ? { min: range.min, max: range.min } : range;
}

/**
 * Whether `offer` holds more CPUs, memory or GPUs than `requirements` ask for at least, i.e.
 * than an instance launched for the job on the host would hold.
 */
export function holdsMoreThanAsked(
  offer: InstanceOfferWithAvailability,
  requirements: Requirements,
): boolean {
  const wanted = requirements.resources;
  if (!wanted.gpu && offer.instance.resources.gpus.length > 0) return true;
  const snug: Requirements = {
    ...requirements,
    resources: {
      ...wanted,
      cpu: { ...wanted.cpu, count: lowerBoundOnly(wanted.cpu.count) ?? wanted.cpu.count },
      memory: lowerBoundOnly(wanted.memory) ?? wanted.memory,
      gpu: wanted.gpu
        ? { ...wanted.gpu, count: lowerBoundOnly(wanted.gpu.count) ?? wanted.gpu.count }
        : wanted.gpu,
    },
  };
  return !offerSatisfies(offer, snug);
}

/**
 * Whether a job of `requirements` should leave the idle, whole (one block) `instance` on the
 * server's host to make room rather than take it: the instance holds more than the job asks for
 * and its fleet does not keep it. The caller has checked that the job fits the instance.
 */
export async function makesRoomRatherThanReused(
  app: AppContext,
  instance: InstancesTable,
  requirements: Requirements,
): Promise<boolean> {
  if (instance.total_blocks !== 1 || instance.busy_blocks !== 0) return false;
  const offer = instanceOfferOf(instance);
  if (offer === null || !holdsMoreThanAsked(offer, requirements)) return false;
  if (!(await sharesServerHost(app, instance.backend ?? ''))) return false;
  return !(await fleetKeepsInstance(app, instance));
}
