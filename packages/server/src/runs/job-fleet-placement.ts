/**
 * A submitted job's place on its fleets' existing instances: which fleets are candidates, and
 * taking the blocks of the instance it fits best (instance reuse), in one step with its release.
 */
import type { JobSpec, RunConfiguration } from '@dstack/core';
import { sql, type Transaction } from 'kysely';
import type { AppContext } from '../context.js';
import { jobRuntimeDataColumn } from '../db/json-columns.js';
import type { Database, FleetsTable, JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import { instanceAtClusterLocation, isClusterFleet } from '../fleets/cluster-fleets.js';
import { type FittingInstance, fittingFleetInstances } from '../fleets/fleet-instance-offers.js';
import { activeFleets } from '../fleets/fleets.js';
import { sharesServerHost } from '../fleets/host-instance-reuse.js';
import { runtimeDataForShare } from '../fleets/instance-blocks.js';
import type { RowLock } from '../pipelines/pipeline.js';
import { unclaimedAt } from '../pipelines/pipeline.js';
import type { ClusterJobPlacement } from './cluster-jobs.js';
import { aheadForInstance, type JobAhead } from './run-priority.js';

/**
 * Candidate fleets for the run: those it names, else all active ones; a run-made fleet when the
 * project has none. A multi-node run's master takes cluster fleets only (cluster-jobs.ts).
 */
export async function candidateFleets(
  app: AppContext,
  run: RunsTable,
  configuration: RunConfiguration,
  cluster: ClusterJobPlacement,
): Promise<FleetsTable[]> {
  if (cluster.kind === 'worker') return [cluster.fleet];
  const active = await activeFleets(app, run.project_id);
  const fleets = cluster.kind === 'master' ? active.filter(isClusterFleet) : active;
  if (configuration.fleets?.length)
    return fleets.filter((fleet) => configuration.fleets?.includes(fleet.name));
  return fleets;
}

/** What became of a job offered the fleet instances it fits on. */
export type FleetPlacement =
  /** Placed on one: its blocks are taken and the job released `provisioning`, in one step. */
  | 'placed'
  /** Another server took the job over meanwhile: nothing was written. */
  | 'lost'
  /** A fitting one was locked (being checked) or taken meanwhile: try again shortly. */
  | 'busy'
  /** None fits. */
  | 'none'
  /** Those it fits, a waiting job of a higher-priority run fits too: it goes first (run-priority.ts). */
  | { behind: JobAhead };

/**
 * Places the job on the fleet instance it fits best: the fewest blocks that satisfy it of an idle
 * instance, or of a busy one split into blocks with some still free. The blocks are taken and
 * the job is released `provisioning` in one transaction: a job whose claim was taken over
 * (another server has it) takes no blocks, and an instance never counts a job that is not on it.
 */
export async function placeOnFleetInstance(
  app: AppContext,
  job: JobsTable,
  lock: RowLock<'jobs'>,
  jobSpec: JobSpec,
  fleets: readonly FleetsTable[],
  configuration: RunConfiguration,
  cluster: ClusterJobPlacement,
  ahead: readonly JobAhead[],
): Promise<FleetPlacement> {
  // Takes this process made since this read are newer than it (instance-takes.ts).
  const readAt = performance.now();
  const fitting = await fittingFleetInstances(
    app,
    fleets.map((fleet) => fleet.id),
    configuration,
    jobSpec.requirements,
  );
  const location = cluster.kind === 'worker' ? cluster.location : null;
  const atLocation = location
    ? fitting.filter(({ instance }) => instanceAtClusterLocation(instance, location))
    : fitting;
  let behind: JobAhead | undefined;
  const candidates: FittingInstance[] = [];
  for (const candidate of atLocation) {
    const sharesHost = ahead.length > 0 && (await sharesServerHost(app, candidate.instance.backend ?? ''));
    const first = aheadForInstance(ahead, candidate.instance, sharesHost);
    behind ??= first;
    if (first === undefined) candidates.push(candidate);
  }
  const takes = app.caches.runs.instanceTakes;
  for (const { instance, share } of candidates) {
    const freeBlocks = instance.total_blocks - instance.busy_blocks;
    if (!takes.worthTrying(instance.id, readAt, freeBlocks, share.blocks)) continue;
    const takeBlocks = async (transaction: Transaction<Database>) => {
      const now = Date.now();
      const taken = await transaction
        .updateTable('instances')
        .set({ status: 'busy', busy_blocks: sql`busy_blocks + ${share.blocks}`, idle_since: null })
        .where('id', '=', instance.id)
        .where('status', 'in', ['idle', 'busy'])
        .where('deleted', '=', 0)
        .where(sql<boolean>`busy_blocks + ${share.blocks} <= total_blocks`)
        .where(unclaimedAt(now))
        .returning(['status', 'busy_blocks', 'total_blocks'])
        .executeTakeFirst();
      if (!taken) return false;
      takes.taken(instance.id, taken.busy_blocks, taken.total_blocks);
      await recordStatusChange(transaction, app.settings.events, 'instances', instance, { status: 'busy' });
      await recordEvent(transaction, app.settings.events, {
        message: `Job assigned to instance. Instance blocks: ${taken.busy_blocks}/${taken.total_blocks} busy`,
        actor: SYSTEM_ACTOR,
        targets: [eventTargets.job(job), eventTargets.instance(instance)],
      });
      return true;
    };
    const outcome = await takes.taking(instance.id, share.blocks, () =>
      lock.releaseWith(takeBlocks, {
        status: 'provisioning',
        instance_id: instance.id,
        instance_assigned: 1,
        job_provisioning_data: instance.job_provisioning_data,
        job_runtime_data: jobRuntimeDataColumn.encode(runtimeDataForShare(share)),
        last_processed_at: 0,
      }),
    );
    if (outcome === 'released') return 'placed';
    if (outcome === 'lost') return 'lost';
  }
  if (candidates.length > 0) return 'busy';
  return behind ? { behind } : 'none';
}
