/**
 * The replicas behind the service proxy: a service run's running jobs (the master job of
 * each replica), taken in turn, and the base URL of one's service port as this server
 * reaches it: directly on loopback for the local backend, else through the same SSH
 * tunnels as the agents (the port is forwarded like the runner's).
 */
import { instancePortUrl } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import { jobProvisioningDataOf, jobRuntimeDataColumn } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';

/** The running jobs answering for a run: the master job (`job_num` 0) of each replica. */
export async function runningReplicas(app: AppContext, runId: string): Promise<JobsTable[]> {
  return app.db
    .selectFrom('jobs')
    .selectAll()
    .where('run_id', '=', runId)
    .where('status', '=', 'running')
    .where('job_num', '=', 0)
    .orderBy('replica_num')
    .execute();
}

/** The next replica in turn for `runId`; replicas coming and going only shift the turn. */
export function nextReplica(app: AppContext, runId: string, replicas: readonly JobsTable[]): JobsTable {
  if (replicas.length === 0) throw new Error('nextReplica needs at least one replica');
  const byRun = app.caches.replicaTurns;
  const turn = byRun.get(runId) ?? 0;
  byRun.set(runId, (turn + 1) % Number.MAX_SAFE_INTEGER);
  return replicas[turn % replicas.length] as JobsTable;
}

/** Forgets the turn of a run that has no replicas left, so the map does not grow forever. */
export function forgetReplicaTurn(app: AppContext, runId: string): void {
  app.caches.replicaTurns.delete(runId);
}

/**
 * The port on the instance for the container's `port`: the shim's mapping when it reported
 * one, else the port itself (host networking, and the local backend's processes).
 */
export function instancePortOf(
  job: Pick<JobsTable, 'job_runtime_data'> & { id?: string },
  port: number,
): number {
  const runtime = jobRuntimeDataColumn.decodeNullable(job.job_runtime_data, job.id ?? '(unnamed)');
  return runtime?.ports?.[String(port)] ?? port;
}

/**
 * `http://host:port` of the replica's service port as this server reaches it. Throws
 * `AgentUnreachableError` when the instance cannot be reached (no hostname, SSH failure).
 */
export async function replicaBaseUrl(
  app: AppContext,
  project: ProjectsTable,
  job: JobsTable,
  servicePort: number,
): Promise<string> {
  const provisioningData = jobProvisioningDataOf(job);
  if (!provisioningData) throw new Error(`Job ${job.job_name} is running without provisioning data`);
  return instancePortUrl(app, project, provisioningData, instancePortOf(job, servicePort));
}
