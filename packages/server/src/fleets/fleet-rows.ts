/** A fleet row's configuration and its live instances, as the fleet service and pipelines read them. */
import type { FleetConfiguration, FleetNodes, InstanceTerminationReason } from '@dstack/core';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf } from '../db/json-columns.js';
import type { InstancesTable } from '../db/schema.js';
import { recordStatusChange } from '../events/status-events.js';
import { unclaimedAt } from '../pipelines/pipeline.js';

/** `nodes` of a fleet; a fleet without it (an SSH fleet, a run-made one) keeps nothing by itself. */
export function fleetNodesOf(configuration: FleetConfiguration): FleetNodes {
  return configuration.nodes ?? { min: 0, target: 0, max: null };
}

/** Instances of the fleet that count towards its size: neither terminating nor gone. */
export async function liveFleetInstances(app: AppContext, fleetId: string): Promise<InstancesTable[]> {
  return app.db
    .selectFrom('instances')
    .selectAll()
    .where('fleet_id', '=', fleetId)
    .where('deleted', '=', 0)
    .where('status', 'not in', ['terminating', 'terminated'])
    .orderBy('instance_num')
    .execute();
}

/**
 * Terminates up to `count` of the fleet's instances that hold no job, newest first
 * (pending and provisioning before idle); returns how many were marked.
 */
export async function terminateSpareInstances(
  app: AppContext,
  fleetId: string,
  count: number,
  reason: InstanceTerminationReason,
): Promise<number> {
  if (count <= 0) return 0;
  const spare = (await liveFleetInstances(app, fleetId))
    .filter((instance) => instance.busy_blocks === 0 && instance.status !== 'busy')
    .sort((a, b) => b.instance_num - a.instance_num);
  let marked = 0;
  for (const instance of spare) {
    if (marked >= count) break;
    const now = Date.now();
    const update = { status: 'terminating', termination_reason: reason } as const;
    await app.db.transaction().execute(async (transaction) => {
      const result = await transaction
        .updateTable('instances')
        .set({ ...update, last_processed_at: 0 })
        .where('id', '=', instance.id)
        .where('status', '=', instance.status)
        .where('busy_blocks', '=', 0)
        .where(unclaimedAt(now))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return;
      marked += 1;
      await recordStatusChange(transaction, app.settings.events, 'instances', instance, update);
    });
  }
  if (marked > 0) app.wakeUps.wake('instances');
  return marked;
}

/**
 * Whether the instance is one of the `nodes.min` instances its fleet keeps, idle or not: the
 * `min` live ones with the lowest numbers. Deciding by rank, not by a count, keeps two idle
 * instances timing out at once from both going.
 */
export async function fleetKeepsInstance(app: AppContext, instance: InstancesTable): Promise<boolean> {
  if (!instance.fleet_id) return false;
  const fleet = await app.db
    .selectFrom('fleets')
    .selectAll()
    .where('id', '=', instance.fleet_id)
    .where('deleted', '=', 0)
    .executeTakeFirst();
  if (fleet?.status !== 'active') return false;
  const { min } = fleetNodesOf(fleetConfigurationOf(fleet));
  if (min === 0) return false;
  const live = await liveFleetInstances(app, fleet.id);
  return live.filter((other) => other.instance_num < instance.instance_num).length < min;
}
