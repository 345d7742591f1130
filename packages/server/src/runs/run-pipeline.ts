/**
 * Runs: the run status follows its jobs (dstack's `process_runs`). A failed
 * job is resubmitted per the `retry` policy after dstack's backoff; a stopping
 * run moves its unfinished jobs to terminating and ends when they have.
 */
import {
  DEFAULT_RETRY_DURATION,
  type JobTerminationReason,
  jobTerminationReasonToRetryEvent,
  type RunTerminationReason,
  runTerminationReasonToJobTerminationReason,
  runTerminationReasonToStatus,
} from '@dstack/core';
import type { Transaction } from 'kysely';
import type { AppContext } from '../context.js';
import { jobSpecOf, runSpecOf } from '../db/json-columns.js';
import type { Database, JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvents, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import { countPendingRun, observeSubmitToProvision } from '../metrics/run-client-metrics.js';
import type { PipelineDefinition, RowLock, RowUpdate } from '../pipelines/pipeline.js';
import { dueIn, unclaimedAt } from '../pipelines/pipeline.js';
import { markServiceGatewayDue } from '../services/service-gateway.js';
import { keepServiceReplicas } from '../services/service-scaling.js';
import { serviceConfigurationOf } from '../services/service-spec.js';
import { planJobSpecs } from './job-specs.js';
import { submitReplicas } from './replica-submissions.js';
import { newJobRow } from './run-rows.js';
import { isScheduled, nextScheduledStart } from './run-schedule.js';

/**
 * A safety net only: every job that changes in a way the run follows marks its run due
 * (in the database, so other replicas see it too), and waits are scheduled explicitly.
 */
const MIN_INTERVAL_MS = 10_000;
/** dstack's resubmission backoff: 15s, 30s, 1m, 2m, 5m, then 10m. */
const RETRY_BACKOFF_SECONDS = [15, 30, 60, 120, 300, 600];
const FINISHED_JOB_STATUSES = ['terminated', 'aborted', 'failed', 'done'];

export function retryDelayMs(attempt: number): number {
  const seconds = RETRY_BACKOFF_SECONDS[Math.min(attempt, RETRY_BACKOFF_SECONDS.length - 1)] as number;
  return seconds * 1000;
}

/**
 * A service replica stopped by the server (scaled down, replaced, or rolled to a new
 * deployment) is retired: its ending decides nothing about the run.
 */
function isRetiredReplica(job: JobsTable): boolean {
  return job.termination_reason === 'scaled_down';
}

/** The latest submission of each job of the run. */
function latestSubmissions(jobs: readonly JobsTable[]): JobsTable[] {
  const latest = new Map<string, JobsTable>();
  for (const job of jobs) {
    const key = `${job.replica_num}:${job.job_num}`;
    const current = latest.get(key);
    if (!current || job.submission_num > current.submission_num) latest.set(key, job);
  }
  return [...latest.values()];
}

/** Moves unfinished jobs to terminating; false when one is claimed by a job pipeline (try again soon). */
async function terminateJobs(
  app: AppContext,
  run: RunsTable,
  jobs: readonly JobsTable[],
  reason: JobTerminationReason,
): Promise<boolean> {
  let allDone = true;
  for (const job of jobs) {
    if (FINISHED_JOB_STATUSES.includes(job.status) || job.status === 'terminating') continue;
    const now = Date.now();
    const update = { status: 'terminating', termination_reason: reason } as const;
    const changed = await app.db.transaction().execute(async (transaction) => {
      const result = await transaction
        .updateTable('jobs')
        .set({ ...update, last_processed_at: 0 })
        .where('id', '=', job.id)
        .where('status', '=', job.status)
        .where(unclaimedAt(now))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await recordStatusChange(transaction, app.settings.events, 'jobs', job, update);
      return true;
    });
    if (!changed) allDone = false;
  }
  app.wakeUps.wake('jobs-terminating');
  // A replica that stops leaves its gateway's choice at once, as it leaves the server proxy's.
  await markServiceGatewayDue(app, run);
  return allDone;
}

/**
 * What becomes of the failed `job` (dstack's `_should_retry_job`): `retry`, `not-retried` (no
 * `retry`, or its event is not retried), or `limit-exceeded` (retried, but `retry.duration`
 * has passed). Retrying lasts `retry.duration` from the failure of the job's last submission
 * that got an instance (by its reason's event), or, when none ever did and it found no
 * capacity, from the run's submission.
 */
function retryDecision(
  run: RunsTable,
  job: JobsTable,
  submissions: readonly JobsTable[],
): 'retry' | 'not-retried' | 'limit-exceeded' {
  const retry = jobSpecOf(job).retry;
  if (!retry) return 'not-retried';
  const retriedOn = (reason: JobTerminationReason | null) => {
    const event = reason === null ? null : jobTerminationReasonToRetryEvent(reason);
    return event !== null && retry.on_events.includes(event);
  };
  const lastProvisioned = submissions
    .filter(
      (other) =>
        other.replica_num === job.replica_num &&
        other.job_num === job.job_num &&
        other.job_provisioning_data !== null,
    )
    .sort((a, b) => b.submission_num - a.submission_num)[0];
  let retryingSince: number;
  if (lastProvisioned === undefined) {
    if (
      !(job.termination_reason === 'failed_to_start_due_to_no_capacity' && retriedOn(job.termination_reason))
    ) {
      return 'not-retried';
    }
    retryingSince = run.submitted_at;
  } else {
    if (!retriedOn(lastProvisioned.termination_reason)) return 'not-retried';
    retryingSince = lastProvisioned.finished_at ?? lastProvisioned.last_processed_at;
  }
  const duration = retry.duration ?? DEFAULT_RETRY_DURATION;
  return Date.now() - retryingSince <= duration * 1000 ? 'retry' : 'limit-exceeded';
}

async function processTerminating(
  app: AppContext,
  run: RunsTable,
  jobs: JobsTable[],
  lock: RowLock<'runs'>,
): Promise<void> {
  const reason = run.termination_reason ?? 'stopped_by_user';
  const latest = latestSubmissions(jobs);
  const claimedAll = await terminateJobs(
    app,
    run,
    latest,
    runTerminationReasonToJobTerminationReason(reason),
  );
  const unfinished = latest.filter((job) => !FINISHED_JOB_STATUSES.includes(job.status));
  if (unfinished.length === 0) {
    await endRun(app, run, reason, (values) => lock.release(values));
    return;
  }
  // Jobs finish in their own pipeline, which wakes us; poll as a fallback.
  await lock.release({ last_processed_at: dueIn(claimedAll ? 1_000 : 100, MIN_INTERVAL_MS) });
}

/**
 * The end of a run none of whose jobs is left to stop: its final status, or, for a scheduled run
 * not stopped by its user, a wait for its next start (as dstack's; its fleet is chosen again then).
 * `release` stores it.
 */
async function endRun(
  app: AppContext,
  run: RunsTable,
  reason: RunTerminationReason,
  release: (values: RowUpdate<'runs'>) => Promise<unknown>,
): Promise<void> {
  const nextStart = stoppedByUser(reason)
    ? null
    : nextScheduledStart(runSpecOf(run).configuration, app.clock());
  if (nextStart !== null) {
    await release({
      status: 'pending',
      next_triggered_at: nextStart,
      fleet_id: null,
      resubmission_attempt: 0,
      last_processed_at: 0,
    });
    app.wakeUps.wake('fleets');
    return;
  }
  await release({ status: runTerminationReasonToStatus(reason) });
  // Log streams end on the run's final status; tell this replica's streams now.
  app.logNotifications.notify(run.id);
  app.caches.services.stats.forget(run.id);
  app.wakeUps.wake('fleets');
}

/**
 * A run all of whose jobs are done has nothing to stop: it passes through terminating to its end
 * in this pass, not in a pass of its own. Both changes are stored and recorded, as two passes
 * would: terminating here (guarded by the claim) in the transaction that then ends it.
 */
async function endAllJobsDone(app: AppContext, run: RunsTable, lock: RowLock<'runs'>): Promise<void> {
  const terminating = { status: 'terminating', termination_reason: 'all_jobs_done' } as const;
  const throughTerminating = async (transaction: Transaction<Database>) => {
    const result = await transaction
      .updateTable('runs')
      .set(terminating)
      .where('id', '=', run.id)
      .where('lock_token', '=', lock.token)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) return false;
    await recordStatusChange(transaction, app.settings.events, 'runs', run, terminating);
    return true;
  };
  await endRun(app, { ...run, ...terminating }, terminating.termination_reason, (values) =>
    lock.releaseWith(throughTerminating, values),
  );
  // A service's gateway stops routing to it, as when the pass of its own stopped its jobs.
  await markServiceGatewayDue(app, run);
}

function stoppedByUser(reason: RunTerminationReason): boolean {
  return reason === 'stopped_by_user' || reason === 'aborted_by_user';
}

async function resubmit(
  app: AppContext,
  run: RunsTable,
  jobs: JobsTable[],
  lock: RowLock<'runs'>,
): Promise<void> {
  // A retry's backoff and a schedule's start are both read on the server's clock.
  const untilStart = (run.next_triggered_at ?? 0) - app.clock();
  if (untilStart > 0) {
    // A waiting run looks again at least every interval: the server's clock may not be the
    // process's (a test moves it), and a move wakes the runs.
    const wait = Math.min(untilStart, MIN_INTERVAL_MS);
    await lock.release({ last_processed_at: dueIn(wait, MIN_INTERVAL_MS) });
    return;
  }
  const onSchedule = run.resubmission_attempt === 0 && isScheduled(runSpecOf(run).configuration);
  const now = Date.now();
  const rows =
    jobs.length === 0
      ? // A scheduled run's first start: its jobs as an apply makes them.
        planJobSpecs(run.run_name, runSpecOf(run), app.settings.images).map((jobSpec) =>
          newJobRow(run.project_id, run.id, run.run_name, jobSpec, 0, now),
        )
      : latestSubmissions(jobs)
          .filter((job) => FINISHED_JOB_STATUSES.includes(job.status) && !isRetiredReplica(job))
          .map((job) => ({
            ...newJobRow(run.project_id, run.id, run.run_name, jobSpecOf(job), job.submission_num + 1, now),
            deployment_num: job.deployment_num ?? 0,
          }));
  // The new submissions are stored with the run's release, or not at all when its claim was lost.
  const created = async (transaction: Transaction<Database>) => {
    if (rows.length === 0) return true;
    await transaction.insertInto('jobs').values(rows).execute();
    await recordEvents(transaction, app.settings.events, [
      ...(onSchedule
        ? [{ message: 'Run started on schedule', actor: SYSTEM_ACTOR, targets: [eventTargets.run(run)] }]
        : []),
      ...rows.map((job) => ({
        message: `Job created on ${onSchedule ? 'schedule' : 'retry'}. Status: SUBMITTED`,
        actor: SYSTEM_ACTOR,
        targets: [eventTargets.job(job)],
      })),
    ]);
    return true;
  };
  await lock.releaseWith(created, { status: 'submitted', next_triggered_at: null, last_processed_at: now });
  app.wakeUps.wake('jobs-submitted');
}

/**
 * `stop_criteria: master-done`: the run is done once its master node (rank 0) is, whatever its
 * workers are doing (they are stopped with the run), as dstack's `_should_stop_on_master_done`.
 */
function masterDone(run: RunsTable, latest: readonly JobsTable[]): boolean {
  const { configuration } = runSpecOf(run);
  if (configuration.stop_criteria !== 'master-done') return false;
  return latest.some((job) => job.job_num === 0 && job.status === 'done');
}

async function followJobs(
  app: AppContext,
  run: RunsTable,
  jobs: JobsTable[],
  lock: RowLock<'runs'>,
): Promise<void> {
  const current = latestSubmissions(jobs).filter((job) => !isRetiredReplica(job));
  // A replica of a service that was placed before (others serve, or served) and found no
  // capacity is tried again later (services/service-scaling.ts), not the end of the service.
  const placedBefore = jobs.some((job) => job.job_provisioning_data !== null);
  const latest =
    placedBefore && serviceConfigurationOf(runSpecOf(run))
      ? current.filter((job) => job.termination_reason !== 'failed_to_start_due_to_no_capacity')
      : current;
  const failed = latest.filter((job) => ['failed', 'terminated', 'aborted'].includes(job.status));
  if (failed.length > 0) {
    const active = latest.filter((job) => !FINISHED_JOB_STATUSES.includes(job.status));
    // The other nodes of a multi-node run are stopped by the server for its retry: their
    // ending does not decide whether it is retried.
    const failures = failed.filter((job) => job.termination_reason !== 'terminated_by_server');
    const decisions = failures.map((job) => retryDecision(run, job, jobs));
    if (decisions.length > 0 && decisions.every((decision) => decision === 'retry')) {
      if (active.length > 0) {
        // Multi-node: the other nodes stop before the run is resubmitted.
        await terminateJobs(app, run, active, 'terminated_by_server');
        await lock.release({ last_processed_at: dueIn(200, MIN_INTERVAL_MS) });
        return;
      }
      await lock.release({
        status: 'pending',
        resubmission_attempt: run.resubmission_attempt + 1,
        next_triggered_at: app.clock() + retryDelayMs(run.resubmission_attempt),
        last_processed_at: 0,
      });
      countPendingRun(await projectNameOf(app, run), runSpecOf(run).configuration.type);
      app.wakeUps.wake('runs');
      return;
    }
    // A job stopped by the user ends the run as stopped; a job whose retrying ran out, as
    // dstack says it (`retry_limit_exceeded`); any other ending ends it as failed.
    const byUser = failed.every((job) =>
      ['terminated_by_user', 'aborted_by_user'].includes(job.termination_reason ?? ''),
    );
    const reason: RunTerminationReason = byUser
      ? 'stopped_by_user'
      : decisions.includes('limit-exceeded')
        ? 'retry_limit_exceeded'
        : 'job_failed';
    await lock.release({ status: 'terminating', termination_reason: reason, last_processed_at: 0 });
    app.wakeUps.wake('runs');
    return;
  }
  if (latest.length > 0 && latest.every((job) => job.status === 'done')) {
    await endAllJobsDone(app, run, lock);
    return;
  }
  if (latest.length > 0 && masterDone(run, latest)) {
    await lock.release({ status: 'terminating', termination_reason: 'all_jobs_done', last_processed_at: 0 });
    app.wakeUps.wake('runs');
    return;
  }
  const statuses = latest.map((job) => job.status);
  const status = statuses.includes('running')
    ? 'running'
    : statuses.some((s) => s === 'provisioning' || s === 'pulling')
      ? 'provisioning'
      : run.status;
  // A resubmission that got an instance starts the backoff over (dstack resets the attempts
  // when the run becomes provisioning), so a long run interrupted now and then is not held 10 minutes.
  const provisioned = status === 'provisioning' && run.status !== 'provisioning';
  const service = await keepServiceReplicas(app, run, jobs, {
    stop: (stopped, reason) => terminateJobs(app, run, stopped, reason),
    submit: (serviceRun, replicas) => submitReplicas(app, serviceRun, replicas),
  });
  // dstack's `_emit_active_metrics`: submitted → provisioning. A run whose job was placed and
  // started between two looks goes straight to running here; that is its first provisioning too.
  const firstProvisioned = run.status === 'submitted' && (status === 'provisioning' || status === 'running');
  await lock.release({
    status,
    ...(provisioned ? { resubmission_attempt: 0 } : {}),
    ...(service?.fields ?? {}),
    ...(service?.nextPassInMs != null
      ? { last_processed_at: dueIn(service.nextPassInMs, MIN_INTERVAL_MS) }
      : {}),
  });
  if (firstProvisioned) {
    observeSubmitToProvision(
      Math.max(0, Date.now() - run.submitted_at) / 1000,
      await projectNameOf(app, run),
      runSpecOf(run).configuration.type,
    );
  }
}

async function projectNameOf(app: AppContext, run: RunsTable): Promise<string> {
  const project = await app.db
    .selectFrom('projects')
    .select('name')
    .where('id', '=', run.project_id)
    .executeTakeFirst();
  return project?.name ?? '';
}

export function runPipeline(app: AppContext): PipelineDefinition<'runs'> {
  return {
    name: 'runs',
    table: 'runs',
    statuses: ['pending', 'submitted', 'provisioning', 'running', 'terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    // A pass is a few quick statements; a fetch claims at most this many rows, so it must be
    // large enough that a busy event loop (one fetch per turn) does not hold runs back.
    workers: 100,
    async process(run, lock) {
      const jobs = await app.db.selectFrom('jobs').selectAll().where('run_id', '=', run.id).execute();
      if (run.status === 'terminating') await processTerminating(app, run, jobs, lock);
      else if (run.status === 'pending') await resubmit(app, run, jobs, lock);
      else await followJobs(app, run, jobs, lock);
    },
  };
}
