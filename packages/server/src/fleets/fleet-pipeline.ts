/**
 * Fleets: a cloud fleet with `nodes` keeps at least `min` live instances
 * (replacing terminated ones), never more than `max`, and provisions its
 * pending instances (those apply added for `target`); a deleted fleet
 * terminates its idle instances and ends once they are gone; a fleet the
 * server made for a run is removed once it is empty. The fleet's claim makes
 * this exclusive: with several servers on one database, one of them sizes it.
 */
import { projectOf } from '../accounts/projects.js';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf } from '../db/json-columns.js';
import type { FleetsTable } from '../db/schema.js';
import { recordStatusChange } from '../events/status-events.js';
import type { PipelineDefinition, RowLock } from '../pipelines/pipeline.js';
import { dueIn, unclaimedAt } from '../pipelines/pipeline.js';
import { clusterMasterInstance, isClusterFleet } from './cluster-fleets.js';
import { missingFleetBackends } from './fleet-backends.js';
import { provisionFleetInstance, topUpFleetInstances } from './fleet-provisioning.js';
import { fleetNodesOf, liveFleetInstances, terminateSpareInstances } from './fleet-rows.js';
import { abandonPendingInstance, describeLaunchFailures } from './instance-launch.js';
import { deleteFleetPlacementGroups } from './placement-groups.js';

const MIN_INTERVAL_MS = 5_000;
/** How soon a fleet below `min` tries again after every offer failed (dstack: the fleet interval, 15 s). */
const NO_CAPACITY_RETRY_MS = 15_000;
/**
 * How soon a terminating fleet tries again to delete a placement group its backend kept: an
 * instance still shutting down (EC2: up to a minute) holds its group, so the delete passes a few
 * seconds after the last one went, and `fleet delete` ends then rather than a fleet interval later.
 */
const GROUP_DELETE_RETRY_MS = 2_000;
/** A run-made fleet gets this long to receive its first instance before it counts as empty. */
const RUN_FLEET_GRACE_MS = 60_000;

async function liveInstances(app: AppContext, fleetId: string) {
  return app.db
    .selectFrom('instances')
    .select(['id', 'status'])
    .where('fleet_id', '=', fleetId)
    .where('deleted', '=', 0)
    .where('status', '!=', 'terminated')
    .execute();
}

async function processTerminating(
  app: AppContext,
  fleet: FleetsTable,
  lock: RowLock<'fleets'>,
): Promise<void> {
  const instances = await liveInstances(app, fleet.id);
  if (instances.length === 0) {
    // The cluster's placement groups go with it, once no instance is left in them.
    if (!(await deleteFleetPlacementGroups(app, fleet.id))) {
      await lock.release({ last_processed_at: dueIn(GROUP_DELETE_RETRY_MS, MIN_INTERVAL_MS) });
      return;
    }
    await lock.release({ status: 'terminated', deleted: 1 });
    return;
  }
  const now = Date.now();
  const update = { status: 'terminating', termination_reason: 'terminated_by_user' } as const;
  await app.db.transaction().execute(async (transaction) => {
    const ending = await transaction
      .selectFrom('instances')
      .selectAll()
      .where('fleet_id', '=', fleet.id)
      .where('status', 'in', ['idle', 'provisioning', 'pending'])
      .where(unclaimedAt(now))
      .execute();
    if (ending.length === 0) return;
    const ended = await transaction
      .updateTable('instances')
      .set({ ...update, last_processed_at: 0 })
      .where(
        'id',
        'in',
        ending.map((instance) => instance.id),
      )
      .where('status', 'in', ['idle', 'provisioning', 'pending'])
      .returning('id')
      .execute();
    for (const instance of ending.filter((row) => ended.some((end) => end.id === row.id))) {
      await recordStatusChange(transaction, app.settings.events, 'instances', instance, update);
    }
  });
  app.wakeUps.wake('instances');
  await lock.release({ last_processed_at: dueIn(500, MIN_INTERVAL_MS) });
}

/**
 * A cloud fleet with no backend to launch on (its backend was removed from the project after
 * the apply, which refuses such a fleet): its own pending instances fail once with `error` and
 * the reason, none is added in their place, and the fleet says why in `status_message`. It is
 * looked at again now and then, and sized as before once the project has such a backend again.
 */
async function holdFleetWithoutBackends(
  app: AppContext,
  fleet: FleetsTable,
  lock: RowLock<'fleets'>,
  missing: string,
): Promise<void> {
  const message = `no backend to launch instances on: ${missing}`;
  const pending = (await liveFleetInstances(app, fleet.id)).filter(
    (instance) => instance.status === 'pending' && instance.busy_blocks === 0,
  );
  for (const instance of pending) await abandonPendingInstance(app, instance.id, 'error', message);
  if (pending.length > 0) app.wakeUps.wake('instances');
  if (fleet.status_message !== message) {
    await app.db.updateTable('fleets').set({ status_message: message }).where('id', '=', fleet.id).execute();
  }
  await lock.release({ last_processed_at: dueIn(NO_CAPACITY_RETRY_MS, MIN_INTERVAL_MS) });
}

/**
 * Sizes a cloud fleet: tops it up to `min` with pending instances, provisions every pending
 * instance of its own (a job's placeholder is provisioned by the job), and terminates
 * instances without jobs beyond `max`. Idle instances beyond `min` end through their
 * `termination_idle_time` in the instance pipeline.
 */
async function consolidate(app: AppContext, fleet: FleetsTable, lock: RowLock<'fleets'>): Promise<void> {
  const configuration = fleetConfigurationOf(fleet);
  if (configuration.nodes === undefined || configuration.ssh_config !== undefined) return;
  const missing = missingFleetBackends(
    configuration,
    await app.backends.getProjectBackends(fleet.project_id),
  );
  if (missing !== null) {
    await holdFleetWithoutBackends(app, fleet, lock, missing);
    return;
  }
  if (fleet.status_message !== null) {
    await app.db.updateTable('fleets').set({ status_message: null }).where('id', '=', fleet.id).execute();
  }
  const { min, max } = fleetNodesOf(configuration);
  const live = await liveFleetInstances(app, fleet.id);
  if (live.length < min) await topUpFleetInstances(app, fleet, min);
  if (max !== null && live.length > max) {
    await terminateSpareInstances(app, fleet.id, live.length - max, 'max_instances_limit');
  }
  const pending = (await liveFleetInstances(app, fleet.id)).filter(
    (instance) => instance.status === 'pending' && instance.busy_blocks === 0,
  );
  if (pending.length === 0) return;
  const project = await projectOf(app, fleet.project_id);
  let failed = false;
  for (const instance of pending) {
    const result = await provisionFleetInstance(app, fleet, project, instance);
    if (!result.launched) {
      failed = true;
      const why =
        result.failures.length > 0 ? describeLaunchFailures(result.failures) : 'no offers match the fleet';
      console.error(`[fleets] could not launch ${instance.name}: ${why}`);
      // A cluster's other instances go where its master goes: none launches before it does.
      if (isClusterFleet(fleet) && (await clusterMasterInstance(app, fleet.id)) === null) break;
    }
  }
  // An instance below `min` that found no capacity is tried again at the next pass.
  if (failed) await lock.release({ last_processed_at: dueIn(NO_CAPACITY_RETRY_MS, MIN_INTERVAL_MS) });
}

export function fleetPipeline(app: AppContext): PipelineDefinition<'fleets'> {
  return {
    name: 'fleets',
    table: 'fleets',
    statuses: ['active', 'terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 10,
    async process(fleet, lock) {
      if (fleet.status === 'terminating') {
        await processTerminating(app, fleet, lock);
        return;
      }
      if (fleet.auto_created === 1) {
        if (Date.now() - fleet.created_at > RUN_FLEET_GRACE_MS) {
          const instances = await liveInstances(app, fleet.id);
          if (instances.length === 0 && (await deleteFleetPlacementGroups(app, fleet.id))) {
            await lock.release({ status: 'terminated', deleted: 1 });
          }
        }
        return;
      }
      await consolidate(app, fleet, lock);
    },
  };
}
