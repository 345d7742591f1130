/**
 * Following a running job: pull the runner's state and logs, and end the job when the runner
 * says so, or on max_duration, utilization_policy, inactivity_duration, a provider that took the
 * instance back, or a runner that stopped answering.
 */

import type { RunnerPullResponse } from '@dstack/core/agent-protocol';
import { runnerClientFor } from '../agents/agent-clients.js';
import { jobSpecOf, runSpecOf, type StoredRunSpec } from '../db/json-columns.js';
import type { JobsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { storeRunnerLogs } from '../logs/logs.js';
import { sampleJobMetricsWhenDue } from '../metrics/job-metrics-sampling.js';
import { dueIn } from '../pipelines/pipeline.js';
import { endShownLater } from './attach-window.js';
import { gpuUtilizationVerdict } from './gpu-utilization.js';
import { runnerPortOf } from './job-runner-port.js';
import {
  asTerminationReason,
  type JobContext,
  MIN_INTERVAL_MS,
  STARTING_POLL_MS,
  terminate,
} from './job-running-context.js';

/** A running job whose agent does not answer this long is given up (dstack: 2 minutes). */
const UNREACHABLE_LIMIT_MS = 120_000;
const MAX_PULLS_PER_PASS = 20;

export interface PulledRunner {
  /** The last final job state seen (done, failed, terminated); null when none is new. */
  finalState: RunnerPullResponse['job_states'][number] | null;
  /** The next pull's timestamp. */
  timestamp: number;
  /** The last answer's `no_connections_secs`: null when the runner does not report it. */
  noConnectionsSecs: number | null;
}

/** Pulls new state and logs from the runner, storing the logs; `signal` aborts the pulls. */
export async function pullRunner(
  context: Pick<JobContext, 'app' | 'job' | 'project' | 'provisioningData'> & { signal?: AbortSignal },
): Promise<PulledRunner> {
  const { app, job, project, provisioningData, signal } = context;
  const runner = await runnerClientFor(app, project, provisioningData, runnerPortOf(job), job, signal);
  let timestamp = job.runner_timestamp ?? 0;
  let finalState: RunnerPullResponse['job_states'][number] | null = null;
  let noConnectionsSecs: number | null = null;
  for (let pulls = 0; pulls < MAX_PULLS_PER_PASS; pulls++) {
    const response = await runner.pull(timestamp);
    await storeRunnerLogs(app, job, response);
    for (const state of response.job_states) {
      if (['done', 'failed', 'terminated'].includes(state.state)) finalState = state;
    }
    timestamp = Math.max(timestamp, response.last_updated);
    noConnectionsSecs = response.no_connections_secs ?? null;
    if (!response.has_more) break;
  }
  return { finalState, timestamp, noConnectionsSecs };
}

/**
 * A dev environment's `inactivity_duration` in seconds; null for other runs and when it is
 * unset or `off` (dstack's default: a dev environment is not stopped for inactivity).
 */
export function inactivityDurationOf(runSpec: StoredRunSpec): number | null {
  const { configuration } = runSpec;
  if (configuration.type !== 'dev-environment') return null;
  const duration = configuration.inactivity_duration;
  return typeof duration === 'number' ? duration : null;
}

/**
 * Ends the job at once, and returns true, when the backend says its instance is no more: a spot
 * instance the provider took back is `interrupted_by_no_capacity` (an interruption for `retry`),
 * one terminated outside dstack `instance_unreachable`. Backends without `instanceStatus`, and a
 * provider that does not answer, leave the job to the unreachable limit.
 */
async function endedAtProvider(context: JobContext): Promise<boolean> {
  const { app, instance, provisioningData } = context;
  const compute = await app.backends.computeOf(instance.project_id, instance.backend);
  if (!compute?.instanceStatus) return false;
  const status = await compute.instanceStatus(provisioningData).catch(() => 'running' as const);
  if (status === 'running') return false;
  if (status === 'interrupted') {
    await terminate(context, 'interrupted_by_no_capacity', 'the provider took the spot instance back');
  } else {
    await terminate(context, 'instance_unreachable', 'the instance was terminated outside dstack');
  }
  return true;
}

/**
 * running: pull state and logs; end the job when the runner says so, or on max_duration,
 * utilization_policy, inactivity_duration or unreachability.
 */
export async function followJob(context: JobContext): Promise<void> {
  const { job } = context;
  const jobSpec = jobSpecOf(job);
  let pulled: PulledRunner;
  try {
    pulled = await pullRunner({ ...context, signal: context.lock.signal });
  } catch (error) {
    if (await endedAtProvider(context)) return;
    const since = job.disconnected_at ?? Date.now();
    if (Date.now() - since > UNREACHABLE_LIMIT_MS) {
      await terminate(
        context,
        'instance_unreachable',
        `the runner did not answer for 2 minutes: ${errorMessage(error)}`,
      );
      return;
    }
    await context.lock.release({ disconnected_at: since });
    return;
  }
  const { finalState, timestamp, noConnectionsSecs } = pulled;
  if (finalState && endShownLater(context.app, job.id, Date.now())) {
    // Pulled again next time from before the end (logs carry positions: none is stored twice).
    await context.lock.release({
      runner_timestamp: Math.min(timestamp, finalState.timestamp - 1),
      disconnected_at: null,
      last_processed_at: dueIn(MIN_INTERVAL_MS, MIN_INTERVAL_MS),
    });
    return;
  }
  if (finalState) {
    const reason = asTerminationReason(
      finalState.termination_reason,
      finalState.state === 'done' ? 'done_by_runner' : 'executor_error',
    );
    await terminate(context, reason, finalState.termination_message ?? null, {
      exit_status: finalState.exit_status ?? null,
      runner_timestamp: timestamp,
      disconnected_at: null,
    });
    return;
  }
  if (jobSpec.max_duration && Date.now() - job.submitted_at > jobSpec.max_duration * 1000) {
    await terminate(context, 'max_duration_exceeded', `max_duration ${jobSpec.max_duration}s exceeded`, {
      runner_timestamp: timestamp,
    });
    return;
  }
  const sampled = await sampleJobMetricsWhenDue({
    app: context.app,
    job,
    project: context.project,
    provisioningData: context.provisioningData,
    runnerPort: runnerPortOf(job),
    signal: context.lock.signal,
  });
  // Judged when a sample comes in: between samples the verdict has nothing new to go on.
  const policy = jobSpec.utilization_policy;
  const lowUtilization = sampled && policy ? await gpuUtilizationVerdict(context.app, job, policy) : null;
  if (lowUtilization !== null) {
    await terminate(context, 'terminated_due_to_utilization_policy', lowUtilization, {
      runner_timestamp: timestamp,
    });
    return;
  }
  // As dstack: recorded only while the run has an inactivity_duration (so it clears when that goes).
  const inactivityDuration = inactivityDurationOf(runSpecOf(context.run));
  const inactivitySecs = inactivityDuration === null ? null : noConnectionsSecs;
  if (inactivityDuration !== null && inactivitySecs !== null && inactivitySecs >= inactivityDuration) {
    await terminate(
      context,
      'inactivity_duration_exceeded',
      `The job was inactive for ${inactivitySecs} seconds, exceeding the inactivity_duration of ${inactivityDuration} seconds`,
      { runner_timestamp: timestamp, inactivity_secs: inactivitySecs },
    );
    return;
  }
  await context.lock.release({
    runner_timestamp: timestamp,
    disconnected_at: null,
    inactivity_secs: inactivitySecs,
    last_processed_at: dueIn(
      pullIntervalMs(job, Date.now(), context.app.logNotifications.listenerCount(job.run_id) > 0),
      MIN_INTERVAL_MS,
    ),
  });
}

/**
 * How often a settled running job is pulled when nobody watches its logs on this server: dstack's
 * own cadence (its jobs-running pipeline's `min_processing_interval`). Pulling every job every
 * second made the pass of 1,000 running jobs take 8 s and the API wait behind it.
 */
const SETTLED_PULL_MS = 5_000;

/**
 * How soon to pull a running job again: a young submission (a short task on a warm instance)
 * is pulled every few hundred milliseconds, so its end is reported promptly; from a few seconds
 * of age on, every second while a log stream of this server follows its run (`watched`: its user
 * sees the lines as they come), else less often as it ages, every 5 s from a minute on.
 */
export function pullIntervalMs(job: Pick<JobsTable, 'submitted_at'>, now: number, watched: boolean): number {
  const age = now - job.submitted_at;
  // Whole milliseconds: it becomes a time column's value (whole-numbers.ts rounds any write as well).
  const young = Math.min(MIN_INTERVAL_MS, Math.max(STARTING_POLL_MS * 2, Math.round(age / 4)));
  return watched ? young : Math.max(young, Math.min(SETTLED_PULL_MS, Math.round(age / 12)));
}
