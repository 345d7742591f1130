/**
 * The nodes of a multi-node task start together (dstack's `_should_wait_for_other_nodes` and
 * `_get_cluster_info`): no node's job is handed to its agents until every node of its replica
 * has an instance whose agent answers, and `startup_order` may hold the master (workers-first)
 * or the workers (master-first) until the others run. Each runner then gets the cluster's
 * addresses (`cluster_info`): every node's internal IP in rank order, the master's first.
 * When one node ends, the run pipeline ends the others with it (and `retry` resubmits them all).
 */
import type { JobProvisioningData, JobRuntimeData, JobStatus } from '@dstack/core';
import type { RunnerClusterInfo } from '@dstack/core/agent-protocol';
import type { AppContext } from '../context.js';
import { instanceProvisioningDataOf, jobProvisioningDataOf, jobRuntimeDataOf } from '../db/json-columns.js';
import type { JobsTable } from '../db/schema.js';

export type StartupOrder = 'any' | 'master-first' | 'workers-first';

/** One node of a replica, as the gang reads it: its job's latest submission and its instance. */
export interface ClusterNode {
  jobNum: number;
  status: JobStatus;
  /** The instance the job was given, as its pipeline last saw it; null before the job has one. */
  provisioningData: JobProvisioningData | null;
  /** The job's share of its instance (its GPUs), as placing it recorded it. */
  runtimeData: JobRuntimeData | null;
  /** The instance's agent answered (the instance pipeline made it idle or busy). */
  agentUp: boolean;
}

/** The latest submission of every job of `job`'s replica (itself included), in rank order. */
export async function clusterNodesOf(app: AppContext, job: JobsTable): Promise<ClusterNode[]> {
  const rows = await app.db
    .selectFrom('jobs')
    .leftJoin('instances', 'instances.id', 'jobs.instance_id')
    .selectAll('jobs')
    .select([
      'instances.status as instance_status',
      'instances.job_provisioning_data as instance_provisioning_data',
      'instances.id as instance_row_id',
    ])
    .where('jobs.run_id', '=', job.run_id)
    .where('jobs.replica_num', '=', job.replica_num)
    .execute();
  const latest = new Map<number, (typeof rows)[number]>();
  for (const row of rows) {
    const current = latest.get(row.job_num);
    if (!current || row.submission_num > current.submission_num) latest.set(row.job_num, row);
  }
  return [...latest.values()]
    .sort((a, b) => a.job_num - b.job_num)
    .map((row) => {
      const assigned = row.instance_assigned === 1 && row.instance_row_id !== null;
      const instanceData =
        assigned && row.instance_row_id
          ? instanceProvisioningDataOf({
              id: row.instance_row_id,
              job_provisioning_data: row.instance_provisioning_data ?? null,
            })
          : null;
      return {
        jobNum: row.job_num,
        status: row.status,
        provisioningData: instanceData ?? (assigned ? jobProvisioningDataOf(row) : null),
        runtimeData: jobRuntimeDataOf(row),
        agentUp: assigned && (row.instance_status === 'idle' || row.instance_status === 'busy'),
      };
    });
}

/**
 * Why the node `jobNum` must not start yet, or null when it may: every node needs an instance
 * with an address and an answering agent; then `startupOrder` master-first holds the workers
 * until the master (rank 0) runs, workers-first holds the master until every worker runs.
 * A single node never waits.
 */
export function clusterWaitReason(
  jobNum: number,
  nodes: readonly ClusterNode[],
  startupOrder: StartupOrder,
): string | null {
  if (nodes.length <= 1) return null;
  const unplaced = nodes.filter((node) => !node.provisioningData);
  if (unplaced.length > 0) return `waiting for node(s) ${ranks(unplaced)} to get an instance`;
  const notUp = nodes.filter((node) => !node.provisioningData?.hostname || !node.agentUp);
  if (notUp.length > 0) return `waiting for the agents of node(s) ${ranks(notUp)}`;
  if (startupOrder === 'master-first' && jobNum !== 0) {
    const master = nodes.find((node) => node.jobNum === 0);
    if (master && !hasStarted(master))
      return 'waiting for the master node to run (startup_order: master-first)';
  }
  if (startupOrder === 'workers-first' && jobNum === 0) {
    const waiting = nodes.filter((node) => node.jobNum !== 0 && !hasStarted(node));
    if (waiting.length > 0)
      return `waiting for worker node(s) ${ranks(waiting)} to run (startup_order: workers-first)`;
  }
  return null;
}

/**
 * Whether the node's job was handed to its runner (running, or already past it: a node that ended
 * early must not hold the others for good; its run ends them if it failed).
 */
function hasStarted(node: ClusterNode): boolean {
  return !['submitted', 'provisioning', 'pulling'].includes(node.status);
}

function ranks(nodes: readonly ClusterNode[]): string {
  return nodes.map((node) => node.jobNum).join(', ');
}

/** The address the other nodes reach a node on: its instance's internal IP, else its hostname. */
export function nodeAddress(data: JobProvisioningData): string {
  return data.internal_ip || data.hostname || '';
}

function nodeGpus(node: Pick<ClusterNode, 'provisioningData' | 'runtimeData'>): number {
  const resources =
    node.runtimeData?.offer?.instance.resources ?? node.provisioningData?.instance_type.resources;
  return resources?.gpus.length ?? 0;
}

/**
 * The runner's `cluster_info` for node `self` (dstack's `_get_cluster_info`): every node's address
 * and GPUs in rank order, the master's address, and this node's GPUs. `nodes` must all have an
 * instance (`clusterWaitReason` returned null); a run of one node is a cluster of itself.
 */
export function clusterInfoOf(
  self: Pick<ClusterNode, 'provisioningData' | 'runtimeData'>,
  nodes: readonly ClusterNode[],
): RunnerClusterInfo {
  const members = nodes.length > 0 ? nodes : [self];
  const jobIps = members.map((node) => (node.provisioningData ? nodeAddress(node.provisioningData) : ''));
  return {
    job_ips: jobIps,
    master_job_ip: jobIps[0] ?? '',
    gpus_per_job: nodeGpus(self),
    gpus_per_node: members.map(nodeGpus),
  };
}
