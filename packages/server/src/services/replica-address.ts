/**
 * Where a replica's service port answers this server: directly on loopback for the local
 * backend, else through the same SSH tunnels as the agents (the port is forwarded like the
 * runner's). The service proxy sends requests there and the run pipeline its probes.
 */
import { instancePortUrl } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import { jobProvisioningDataOf, jobRuntimeDataColumn } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';

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
