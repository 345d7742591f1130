/**
 * Where the jobs of a multi-node task go (dstack's multinode placement): only to cluster fleets
 * (`placement: cluster`), a run-made one when the project has none. The master (rank 0) is placed
 * first; each worker then goes to the master's fleet, on an instance at the master's backend,
 * region and zone (and into its placement group, see `fleets/placement-groups.ts`).
 */
import type { JobSpec } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { FleetsTable, JobsTable } from '../db/schema.js';
import { type ClusterLocation, clusterLocationOf } from '../fleets/cluster-fleets.js';

export type ClusterJobPlacement =
  /** Not a node of a cluster: any fleet. */
  | { kind: 'single' }
  /** The master of a cluster: cluster fleets only. */
  | { kind: 'master' }
  /** A worker: the master's fleet, at the master's location. */
  | { kind: 'worker'; fleet: FleetsTable; location: ClusterLocation | null }
  /** A worker whose master has no instance yet: it looks again shortly. */
  | { kind: 'wait' };

/** How the job is placed (see `ClusterJobPlacement`). */
export async function clusterJobPlacement(
  app: AppContext,
  job: JobsTable,
  jobSpec: JobSpec,
): Promise<ClusterJobPlacement> {
  if (!jobSpec.requirements.multinode) return { kind: 'single' };
  if (job.job_num === 0) return { kind: 'master' };
  const master = await app.db
    .selectFrom('jobs')
    .selectAll()
    .where('run_id', '=', job.run_id)
    .where('replica_num', '=', job.replica_num)
    .where('job_num', '=', 0)
    .orderBy('submission_num', 'desc')
    .limit(1)
    .executeTakeFirst();
  // A master without an instance (or one that ended: its run ends or retries every node) holds the workers.
  if (!master || master.instance_id === null || master.instance_assigned === 0) return { kind: 'wait' };
  const instance = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('id', '=', master.instance_id)
    .executeTakeFirst();
  if (!instance?.fleet_id) return { kind: 'wait' };
  const fleet = await app.db
    .selectFrom('fleets')
    .selectAll()
    .where('id', '=', instance.fleet_id)
    .executeTakeFirst();
  if (!fleet) return { kind: 'wait' };
  return { kind: 'worker', fleet, location: clusterLocationOf(instance) };
}

/**
 * Makes the other nodes of `job`'s replica that wait in `submitted` due now: the master has its
 * instance, and they go where it went.
 */
export async function markClusterWorkersDue(app: AppContext, job: JobsTable): Promise<void> {
  await app.db
    .updateTable('jobs')
    .set({ last_processed_at: 0 })
    .where('run_id', '=', job.run_id)
    .where('replica_num', '=', job.replica_num)
    .where('id', '!=', job.id)
    .where('status', '=', 'submitted')
    .execute();
  app.wakeUps.wake('jobs-submitted');
}
