/**
 * Jobs in `provisioning`, `pulling` and `running`: submit the task to the shim
 * once the instance answers, hand the job to the runner once the task runs
 * (job-starting.ts), then pull the runner's state and logs until the job ends
 * (job-following.ts). This module is the pipeline: which step a job is due for.
 */
import type { JobTerminationReason } from '@dstack/core';
import { projectOf } from '../accounts/projects.js';
import type { AppContext } from '../context.js';
import { instanceProvisioningDataOf, jobSpecOf, runSpecOf, type StoredRunSpec } from '../db/json-columns.js';
import type { InstancesTable } from '../db/schema.js';
import { instanceRowOf } from '../fleets/instance-rows.js';
import type { PipelineDefinition } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { type ClusterNode, clusterNodesOf, clusterWaitReason, type StartupOrder } from './cluster-gang.js';
import { followJob } from './job-following.js';
import { runRowOf } from './job-pass.js';
import { type JobContext, MIN_INTERVAL_MS, terminate } from './job-running-context.js';
import { startJob, submitTask } from './job-starting.js';

/** How soon a node waiting for the rest of its cluster looks again. */
const CLUSTER_POLL_MS = 250;
/** A pass's limit: a few agent calls, each with its own 30 s deadline. */
const PROCESS_TIMEOUT_MS = 60_000;

/** The run's `startup_order` (a task's; `any` for the others and by default). */
function startupOrderOf(runSpec: StoredRunSpec): StartupOrder {
  return runSpec.configuration.startup_order ?? 'any';
}

/**
 * Why a job ends whose instance ended first. A container backend's rental (the job's own
 * container, `dockerized: false`) that failed before it had an address (its image could not be
 * pulled, Docker could not create its container: the backend's `ProvisioningError`) failed as
 * the job's container: `creating_container_error`, what the shim reports for the same failure
 * on a VM. Any other instance lost under a job is dstack's `waiting_instance_limit_exceeded`.
 */
function lostInstanceReason(instance: InstancesTable): JobTerminationReason {
  const data = instanceProvisioningDataOf(instance);
  const containerFailed =
    instance.termination_reason === 'error' && data !== null && !data.dockerized && !data.hostname;
  return containerFailed ? 'creating_container_error' : 'waiting_instance_limit_exceeded';
}

export function jobRunningPipeline(app: AppContext): PipelineDefinition<'jobs'> {
  return {
    name: 'jobs-running',
    table: 'jobs',
    statuses: ['provisioning', 'pulling', 'running'],
    minIntervalMs: MIN_INTERVAL_MS,
    // A pass mostly waits for the agents (several HTTP round trips): many run at once.
    workers: 100,
    // A pass that outlasts this (agents that do not answer) frees its worker; its calls are aborted.
    processTimeoutMs: PROCESS_TIMEOUT_MS,
    async process(job, lock) {
      const run = await runRowOf(app, job.run_id);
      if (run.status === 'terminating') return;
      const instance = await instanceRowOf(app, job.instance_id);
      if (!instance || ['terminating', 'terminated'].includes(instance.status)) {
        await terminate(
          { app, lock, job },
          instance ? lostInstanceReason(instance) : 'waiting_instance_limit_exceeded',
          instance?.termination_reason_message ?? 'the instance is gone',
        );
        return;
      }
      const provisioningData = instanceProvisioningDataOf(instance);
      if (
        !provisioningData?.hostname ||
        instance.status === 'provisioning' ||
        instance.status === 'pending'
      ) {
        // The instance pipeline wakes us when the instance is up.
        return;
      }
      const project = await projectOf(app, job.project_id);
      let clusterNodes: ClusterNode[] = [];
      if (job.status !== 'running' && jobSpecOf(job).requirements.multinode) {
        // A node of a cluster starts only with the others (cluster-gang.ts).
        clusterNodes = await clusterNodesOf(app, job);
        const order = job.status === 'provisioning' ? startupOrderOf(runSpecOf(run)) : 'any';
        if (clusterWaitReason(job.job_num, clusterNodes, order) !== null) {
          await lock.release({ last_processed_at: dueIn(CLUSTER_POLL_MS, MIN_INTERVAL_MS) });
          return;
        }
      }
      const context: JobContext = { app, job, lock, run, project, instance, provisioningData, clusterNodes };
      if (job.status === 'provisioning') {
        if (provisioningData.dockerized) await submitTask(context);
        else await startJob(context);
      } else if (job.status === 'pulling') {
        await startJob(context);
      } else {
        await followJob(context);
      }
    },
  };
}
