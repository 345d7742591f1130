/**
 * Jobs in `terminating`: stop the job gracefully (the runner sends SIGTERM and
 * kills after `stop_duration`), collect the last logs, remove the shim task,
 * free the instance block, and set the final status from the termination reason.
 */
import { DEFAULT_STOP_DURATION, type JobTerminationReason, jobTerminationReasonToStatus } from '@dstack/core';
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import type { InstancesTable, JobsTable, ProjectsTable } from '../db/schema.js';
import { runServicesOf } from '../run-services.js';
import { runnerClientFor, shimClientFor } from './agent-clients.js';
import { pullRunner, runnerPortOf } from './job-running.js';
import type { PipelineDefinition, RowLock } from './pipeline.js';
import { dueIn, instanceRowOf, jobSpecOf, markRunDue, projectOf, provisioningDataOf } from './rows.js';

const MIN_INTERVAL_MS = 500;
/** How often to look again while the runner stops the job. */
const STOPPING_POLL_MS = 200;
/** Stop waiting for an agent that does not answer after this long. */
const UNREACHABLE_GRACE_MS = 30_000;

/** Reasons set by the runner itself: the job already ended, nothing to stop. */
const RUNNER_REASONS: readonly string[] = [
  'done_by_runner',
  'container_exited_with_error',
  'executor_error',
  'ports_binding_failed',
  'creating_container_error',
  'log_quota_exceeded',
];

/** Frees the job's block; the instance becomes idle when it was the last one. */
async function freeInstanceBlock(app: AppContext, instance: InstancesTable): Promise<void> {
  await app.db
    .updateTable('instances')
    .set({
      busy_blocks: sql`CASE WHEN busy_blocks > 0 THEN busy_blocks - 1 ELSE 0 END`,
      status: sql`CASE WHEN busy_blocks <= 1 THEN 'idle' ELSE 'busy' END`,
      idle_since: sql`CASE WHEN busy_blocks <= 1 THEN CAST(${Date.now()} AS BIGINT) ELSE idle_since END`,
      last_processed_at: 0,
    })
    .where('id', '=', instance.id)
    .where('status', '=', 'busy')
    .execute();
}

/**
 * Asks the runner to stop (once), and reports whether the job has ended:
 * the runner said so, or it can no longer be reached, or `remove_at` passed.
 */
async function stopOnRunner(
  app: AppContext,
  job: JobsTable,
  project: ProjectsTable,
  instance: InstancesTable,
): Promise<{ ended: boolean; values: Record<string, unknown> }> {
  const provisioningData = provisioningDataOf(instance);
  if (!provisioningData?.hostname || !job.job_runtime_data) return { ended: true, values: {} };
  const now = Date.now();
  const firstPass = job.remove_at === null;
  const stopSeconds = jobSpecOf(job).stop_duration ?? DEFAULT_STOP_DURATION;
  const removeAt = job.remove_at ?? now + stopSeconds * 1000 + UNREACHABLE_GRACE_MS;
  try {
    if (firstPass && !RUNNER_REASONS.includes(job.termination_reason ?? '')) {
      const runner = await runnerClientFor(app, project, provisioningData, runnerPortOf(job));
      await runner.stop();
    }
    const { finalState, timestamp } = await pullRunner({ app, job, project, provisioningData });
    const ended = finalState !== null || RUNNER_REASONS.includes(job.termination_reason ?? '');
    const exitStatus = finalState?.exit_status ?? job.exit_status;
    return {
      ended: ended || now > removeAt,
      values: { runner_timestamp: timestamp, remove_at: removeAt, exit_status: exitStatus },
    };
  } catch {
    // The runner is gone (its task ended or the instance died): nothing left to stop.
    return { ended: true, values: { remove_at: removeAt } };
  }
}

async function removeShimTask(
  app: AppContext,
  job: JobsTable,
  project: ProjectsTable,
  instance: InstancesTable,
): Promise<void> {
  const provisioningData = provisioningDataOf(instance);
  if (!provisioningData?.hostname || !provisioningData.dockerized) return;
  try {
    const shim = await shimClientFor(app, project, provisioningData);
    const task = await shim.getTask(job.id);
    if (!task) return;
    if (task.status !== 'terminated') {
      await shim.terminateTask(job.id, {
        termination_reason: job.termination_reason ?? 'terminated_by_server',
        termination_message: job.termination_reason_message ?? '',
        timeout: 0,
      });
    }
    await shim.removeTask(job.id);
  } catch {
    // Best effort: the instance may already be gone; its own pipeline cleans up.
  }
}

async function finish(
  app: AppContext,
  job: JobsTable,
  lock: RowLock,
  values: Record<string, unknown>,
): Promise<void> {
  const reason = (job.termination_reason ?? 'terminated_by_server') as JobTerminationReason;
  await lock.release({
    ...values,
    status: jobTerminationReasonToStatus(reason),
    termination_reason: reason,
    finished_at: Date.now(),
    last_processed_at: Date.now(),
  });
  runServicesOf(app).wakeUps.wake('instances', 'jobs-submitted');
  await markRunDue(app, job.run_id);
}

export function jobTerminatingPipeline(app: AppContext): PipelineDefinition<JobsTable> {
  return {
    name: 'jobs-terminating',
    table: 'jobs',
    statuses: ['terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 20,
    async process(job, lock) {
      const instance = await instanceRowOf(app, job.instance_id);
      if (!instance) {
        await finish(app, job, lock, {});
        return;
      }
      const project = await projectOf(app, job.project_id);
      const { ended, values } = await stopOnRunner(app, job, project, instance);
      if (!ended) {
        await lock.release({ ...values, last_processed_at: dueIn(STOPPING_POLL_MS, MIN_INTERVAL_MS) });
        return;
      }
      await removeShimTask(app, job, project, instance);
      await freeInstanceBlock(app, instance);
      await finish(app, job, lock, values);
    },
  };
}
