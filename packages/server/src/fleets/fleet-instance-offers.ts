/**
 * The fleet instances a job could take right now: each reachable instance of the given fleets
 * that is idle, or busy with blocks still free, with the smallest share of it that satisfies the
 * job. The job pipeline claims from them; the plan shows them as offers (dstack's pool offers).
 */
import type { InstanceOfferWithAvailability, Requirements, RunConfiguration } from '@dstack/core';
import { type Kysely, sql } from 'kysely';
import type { AppContext } from '../context.js';
import { instanceOfferOf, instanceProvisioningDataOf } from '../db/json-columns.js';
import type { Database, InstancesTable } from '../db/schema.js';
import { isClusterFleet } from './cluster-fleets.js';
import { activeFleets } from './fleets.js';
import { makesRoomRatherThanReused } from './host-instance-reuse.js';
import { smallestFittingShare } from './instance-blocks.js';

/**
 * The fields of a run configuration that narrow which fleet instances it may use: `fleets` (by
 * name; default every active fleet of the project), `backends`, `regions` and `availability_zones`
 * (the zones of a job's volumes).
 */
export type FleetPlacement = Pick<RunConfiguration, 'fleets' | 'backends' | 'regions' | 'availability_zones'>;

/** A fleet instance and the share of it a job would run on. */
export interface FittingInstance {
  instance: InstancesTable;
  share: InstanceOfferWithAvailability;
}

/**
 * Reachable instances, idle or busy, with blocks free: the condition of the partial index
 * `instances_takeable_idx` (migration 024), word for word, so that the database reads only them.
 * (A job on an instance whose shim does not answer could only wait for it: dstack skips them too.)
 */
const TAKEABLE = sql<boolean>`status IN ('idle', 'busy') AND deleted = 0 AND unreachable = 0 AND busy_blocks < total_blocks`;

/**
 * The instances of fleet `fleetId` with blocks free, cheapest first, from the partial index of
 * such instances by fleet and price: neither the full ones nor, as a read by project did, every
 * instance the project ever had. One fleet per query: given several (`fleet_id IN`), SQLite
 * reads the index by fleet instead, every instance of theirs.
 */
export function takeableInstancesQuery(db: Kysely<Database>, fleetId: string) {
  return db
    .selectFrom('instances')
    .selectAll()
    .where('fleet_id', '=', fleetId)
    .where(TAKEABLE)
    .orderBy('price');
}

/** The takeable instances of every fleet of `fleetIds`, cheapest first. */
async function takeableInstances(
  db: Kysely<Database>,
  fleetIds: readonly string[],
): Promise<InstancesTable[]> {
  const byFleet = await Promise.all(fleetIds.map((fleetId) => takeableInstancesQuery(db, fleetId).execute()));
  return byFleet.length === 1
    ? (byFleet[0] as InstancesTable[])
    : byFleet.flat().sort((a, b) => (a.price ?? 0) - (b.price ?? 0));
}

/**
 * The instances of `fleetIds` the job fits on now, cheapest first; on the server's host, not an
 * idle one that holds more than the job asks for (it makes room for the job's own instead).
 */
export async function fittingFleetInstances(
  app: AppContext,
  fleetIds: readonly string[],
  placement: FleetPlacement,
  requirements: Requirements,
): Promise<FittingInstance[]> {
  if (fleetIds.length === 0) return [];
  const instances = await takeableInstances(app.db, fleetIds);
  const fitting = instances.flatMap((instance) => {
    if (placement.backends?.length && !placement.backends.some((backend) => backend === instance.backend))
      return [];
    if (placement.regions?.length && !placement.regions.includes(instance.region ?? '')) return [];
    // Zones come from a job's volumes (run-volumes.ts): the instance must be in one of them.
    const zones = placement.availability_zones;
    if (zones?.length) {
      const zone = instanceProvisioningDataOf(instance)?.availability_zone;
      if (zone && !zones.includes(zone)) return [];
    }
    const offer = instanceOfferOf(instance);
    if (!offer) return [];
    const freeBlocks = instance.total_blocks - instance.busy_blocks;
    const share = smallestFittingShare(offer, instance.total_blocks, freeBlocks, requirements);
    return share ? [{ instance, share }] : [];
  });
  // An idle instance larger than the job on the server's host makes room instead (host-instance-reuse.ts).
  const leaving = await Promise.all(
    fitting.map(({ instance }) => makesRoomRatherThanReused(app, instance, requirements)),
  );
  return fitting.filter((_, index) => !leaving[index]);
}

/** The plan's offers of fleet instances, `idle` or `busy` as each instance is. */
export async function fleetInstanceOffers(
  app: AppContext,
  projectId: string,
  placement: FleetPlacement,
  requirements: Requirements,
): Promise<InstanceOfferWithAvailability[]> {
  // A multi-node job lands only on a cluster fleet, as in dstack.
  const fleets = (await activeFleets(app, projectId)).filter(
    (fleet) =>
      (!placement.fleets?.length || placement.fleets.includes(fleet.name)) &&
      (!requirements.multinode || isClusterFleet(fleet)),
  );
  const fitting = await fittingFleetInstances(
    app,
    fleets.map((fleet) => fleet.id),
    placement,
    requirements,
  );
  return fitting.map(({ instance, share }) => ({
    ...share,
    availability: instance.busy_blocks === 0 ? ('idle' as const) : ('busy' as const),
  }));
}
