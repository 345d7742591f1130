/**
 * Fleets: a deleted fleet terminates its idle instances and ends once they
 * are gone; a fleet the server made for a run is removed once it is empty.
 */
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import type { FleetsTable } from '../db/schema.js';
import { runServicesOf } from '../run-services.js';
import type { PipelineDefinition, RowLock } from './pipeline.js';
import { dueIn } from './rows.js';

const MIN_INTERVAL_MS = 5_000;
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

async function processTerminating(app: AppContext, fleet: FleetsTable, lock: RowLock): Promise<void> {
  const instances = await liveInstances(app, fleet.id);
  if (instances.length === 0) {
    await lock.release({ status: 'terminated', deleted: 1 });
    return;
  }
  const now = Date.now();
  await app.db
    .updateTable('instances')
    .set({ status: 'terminating', termination_reason: 'terminated_by_user', last_processed_at: 0 })
    .where('fleet_id', '=', fleet.id)
    .where('status', 'in', ['idle', 'provisioning', 'pending'])
    .where(sql<boolean>`(lock_expires_at IS NULL OR lock_expires_at < ${now})`)
    .execute();
  runServicesOf(app).wakeUps.wake('instances');
  await lock.release({ last_processed_at: dueIn(500, MIN_INTERVAL_MS) });
}

export function fleetPipeline(app: AppContext): PipelineDefinition<FleetsTable> {
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
      if (fleet.auto_created === 1 && Date.now() - fleet.created_at > RUN_FLEET_GRACE_MS) {
        const instances = await liveInstances(app, fleet.id);
        if (instances.length === 0) await lock.release({ status: 'terminated', deleted: 1 });
      }
    },
  };
}
