/**
 * Jobs in `terminating`: stop the job gracefully (the runner sends SIGTERM and
 * kills after `stop_duration`), collect the last logs, remove the shim task,
 * detach the job's volumes, free the job's instance blocks, and set the final status from the termination reason.
 * A job stopped while its launch is stranded (instance recorded, still `pending`)
 * gives that instance up, so the machine the launch may have started is ended.
 */
import { DEFAULT_STOP_DURATION, jobTerminationReasonToStatus } from '@dstack/core';
import { type Kysely, sql } from 'kysely';
import { projectOf } from '../accounts/projects.js';
import { runnerClientFor, shimClientFor } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import { instanceProvisioningDataOf, jobSpecOf } from '../db/json-columns.js';
import type { Database, InstancesTable, JobsTable, ProjectsTable } from '../db/schema.js';
import { recordStatusChange, type StatusUpdate } from '../events/status-events.js';
import { blocksHeldBy, shareOfLaunchedInstance } from '../fleets/instance-blocks.js';
import { abandonPendingInstance } from '../fleets/instance-launch.js';
import { INSTANCE_PASS_INTERVAL_MS, instanceRowOf } from '../fleets/instance-rows.js';
import type { PipelineDefinition, RowLock, RowUpdate } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { detachJobVolumes } from '../volumes/job-volumes.js';
import { markLongestWaitingJobDue } from './job-busy-capacity.js';
import { pullRunner } from './job-following.js';
import { markRunDue } from './job-pass.js';
import { runnerPortOf, runnerWasStarted } from './job-runner-port.js';

const MIN_INTERVAL_MS = 500;
/** How often to look again while the runner stops the job. */
const STOPPING_POLL_MS = 200;
/** How often to look again while the job's volumes detach. */
const DETACHING_POLL_MS = 2_000;
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

/**
 * Frees the blocks the job holds; a busy instance becomes idle when they were the last ones. A
 * job stopped while its instance is still provisioning frees its blocks too, so the instance
 * comes up idle (and its fleet's idle rules apply) instead of busy with no job forever. An
 * instance that became idle is due now only when its idle time is shorter than the instance
 * pipeline's interval (`idle_duration: 0`: it goes at once); its regular passes see a longer one
 * end as soon (a pass for each job that ended was a shim healthcheck per run for nothing).
 */
async function freeInstanceBlocks(app: AppContext, instance: InstancesTable, job: JobsTable): Promise<void> {
  // A launch stored on the instance but never on the job (its server died in between) counted
  // the job's share on the instance only.
  const storedLaunchOnly = job.instance_assigned === 0 && job.job_runtime_data === null;
  const blocks = storedLaunchOnly
    ? (shareOfLaunchedInstance(instance, jobSpecOf(job).requirements)?.blocks ?? 1)
    : blocksHeldBy(job.job_runtime_data, job.id);
  const becomesIdle = sql<boolean>`(status = 'busy' AND busy_blocks <= ${blocks})`;
  await changeInstanceRecordingEvent(app, instance, async (transaction) =>
    transaction
      .updateTable('instances')
      .set({
        busy_blocks: sql`CASE WHEN busy_blocks > ${blocks} THEN busy_blocks - ${blocks} ELSE 0 END`,
        status: sql`CASE WHEN ${becomesIdle} THEN 'idle' ELSE status END`,
        idle_since: sql`CASE WHEN ${becomesIdle} THEN CAST(${Date.now()} AS BIGINT) ELSE idle_since END`,
        last_processed_at: sql`CASE WHEN ${becomesIdle} AND termination_idle_time IS NOT NULL AND termination_idle_time * 1000 < ${INSTANCE_PASS_INTERVAL_MS} THEN 0 ELSE last_processed_at END`,
      })
      .where('id', '=', instance.id)
      .where('status', 'in', ['busy', 'provisioning'])
      .returning('status')
      .executeTakeFirst(),
  );
}

/**
 * A container backend's instance (no shim: `dockerized` false, e.g. a Vast.ai rental) is the job's
 * own container, in the job's image: it serves no other job, so it ends with the job, as in dstack.
 */
async function endContainerInstance(app: AppContext, instance: InstancesTable): Promise<void> {
  const provisioningData = instanceProvisioningDataOf(instance);
  if (!provisioningData || provisioningData.dockerized) return;
  await changeInstanceRecordingEvent(app, instance, async (transaction) =>
    transaction
      .updateTable('instances')
      .set({
        status: 'terminating',
        termination_reason: 'job_finished',
        termination_reason_message: "the instance was the job's container",
        last_processed_at: 0,
      })
      .where('id', '=', instance.id)
      .where('status', 'not in', ['terminating', 'terminated'])
      .returning(['status', 'termination_reason', 'termination_reason_message'])
      .executeTakeFirst(),
  );
}

/**
 * Runs `change`, a conditional update of the instance's row, in a transaction with the reading of
 * its status before, and records the status change as an event when the update took (returned the
 * row's new fields).
 */
async function changeInstanceRecordingEvent(
  app: AppContext,
  instance: InstancesTable,
  change: (transaction: Kysely<Database>) => Promise<StatusUpdate<'instances'> | undefined>,
): Promise<void> {
  await app.db.transaction().execute(async (transaction) => {
    const before = await transaction
      .selectFrom('instances')
      .select('status')
      .where('id', '=', instance.id)
      .executeTakeFirst();
    const changed = await change(transaction);
    if (before && changed) {
      await recordStatusChange(
        transaction,
        app.settings.events,
        'instances',
        { ...instance, status: before.status },
        changed,
      );
    }
  });
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
  const provisioningData = instanceProvisioningDataOf(instance);
  if (!provisioningData?.hostname || !runnerWasStarted(job)) return { ended: true, values: {} };
  const now = Date.now();
  const firstPass = job.remove_at === null;
  const stopSeconds = jobSpecOf(job).stop_duration ?? DEFAULT_STOP_DURATION;
  const removeAt = job.remove_at ?? now + stopSeconds * 1000 + UNREACHABLE_GRACE_MS;
  // The runner ended the job and its final state was pulled with every log line before it:
  // there is nothing to stop and nothing more to pull.
  if (RUNNER_REASONS.includes(job.termination_reason ?? '')) {
    return { ended: true, values: { remove_at: removeAt } };
  }
  try {
    if (firstPass) {
      const runner = await runnerClientFor(app, project, provisioningData, runnerPortOf(job), job);
      await runner.stop();
    }
    const { finalState, timestamp } = await pullRunner({ app, job, project, provisioningData });
    const ended = finalState !== null;
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
  const provisioningData = instanceProvisioningDataOf(instance);
  if (!provisioningData?.hostname || !provisioningData.dockerized) return;
  try {
    const shim = await shimClientFor(app, project, provisioningData, instance.id);
    // Terminating a terminated task changes nothing; a task the shim does not know answers 404.
    await shim.terminateTask(job.id, {
      termination_reason: job.termination_reason ?? 'terminated_by_server',
      termination_message: job.termination_reason_message ?? '',
      timeout: 0,
    });
    await shim.removeTask(job.id);
  } catch {
    // Best effort: the instance may already be gone; its own pipeline cleans up.
  }
}

async function finish(
  app: AppContext,
  job: JobsTable,
  lock: RowLock<'jobs'>,
  values: RowUpdate<'jobs'>,
): Promise<void> {
  const reason = job.termination_reason ?? 'terminated_by_server';
  await lock.release({
    ...values,
    status: jobTerminationReasonToStatus(reason),
    termination_reason: reason,
    finished_at: Date.now(),
    last_processed_at: Date.now(),
  });
  await markLongestWaitingJobDue(app);
  app.wakeUps.wake('instances', 'jobs-submitted');
  await markRunDue(app, job.run_id);
}

export function jobTerminatingPipeline(app: AppContext): PipelineDefinition<'jobs'> {
  return {
    name: 'jobs-terminating',
    table: 'jobs',
    statuses: ['terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    // A pass mostly waits for the agents.
    workers: 50,
    async process(job, lock) {
      const instance = await instanceRowOf(app, job.instance_id);
      if (!instance) {
        // Attachments of a job without an instance row are forgotten (nothing is left to detach from).
        await detachJobVolumes(app, job.id, job.project_id);
        await finish(app, job, lock, {});
        return;
      }
      if (job.instance_assigned === 0 && instance.status === 'pending') {
        // The job's launch is stranded (its server died mid-call) and nobody will retry it now:
        // give the instance up, so that the instance pipeline ends the machine it may have.
        const outcome = await abandonPendingInstance(
          app,
          instance.id,
          'job_finished',
          'the job stopped before its launch completed',
        );
        if (outcome === 'terminating') app.wakeUps.wake('instances');
      }
      const project = await projectOf(app, job.project_id);
      const { ended, values } = await stopOnRunner(app, job, project, instance);
      if (!ended) {
        await lock.release({ ...values, last_processed_at: dueIn(STOPPING_POLL_MS, MIN_INTERVAL_MS) });
        return;
      }
      await removeShimTask(app, job, project, instance);
      // However the job ended, its volumes are detached before its instance is freed (dstack too).
      if (!(await detachJobVolumes(app, job.id, job.project_id))) {
        await lock.release({ ...values, last_processed_at: dueIn(DETACHING_POLL_MS, MIN_INTERVAL_MS) });
        return;
      }
      await freeInstanceBlocks(app, instance, job);
      await endContainerInstance(app, instance);
      await finish(app, job, lock, values);
    },
  };
}
