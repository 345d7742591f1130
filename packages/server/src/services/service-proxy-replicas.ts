/**
 * The replicas behind the service proxy: a service run's running jobs (the master job of
 * each replica) that are ready (their probes pass, when the service has probes), taken in
 * turn, and the base URL of one's service port as this server reaches it.
 */
import type { AppContext } from '../context.js';
import type { JobsTable } from '../db/schema.js';

export { instancePortOf, replicaBaseUrl } from './replica-address.js';

/**
 * The running jobs answering for a run: the master job (`job_num` 0) of each replica; with
 * `probed`, only those whose probes pass (a replica gets requests once ready).
 */
export async function runningReplicas(app: AppContext, runId: string, probed = false): Promise<JobsTable[]> {
  let query = app.db
    .selectFrom('jobs')
    .selectAll()
    .where('run_id', '=', runId)
    .where('status', '=', 'running')
    .where('job_num', '=', 0);
  if (probed) query = query.where('probes_ready', '=', 1);
  return query.orderBy('replica_num').execute();
}

/** The next replica in turn for `runId`; replicas coming and going only shift the turn. */
export function nextReplica(app: AppContext, runId: string, replicas: readonly JobsTable[]): JobsTable {
  if (replicas.length === 0) throw new Error('nextReplica needs at least one replica');
  const byRun = app.caches.services.replicaTurns;
  const turn = byRun.get(runId) ?? 0;
  byRun.set(runId, (turn + 1) % Number.MAX_SAFE_INTEGER);
  return replicas[turn % replicas.length] as JobsTable;
}

/** Forgets the turn of a run that has no replicas left, so the map does not grow forever. */
export function forgetReplicaTurn(app: AppContext, runId: string): void {
  app.caches.services.replicaTurns.delete(runId);
}
