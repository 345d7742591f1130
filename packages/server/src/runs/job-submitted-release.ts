/** How a submitted job's pass ends when the job does not move on: it fails, or waits to look again. */
import type { JobTerminationReason } from '@dstack/core';
import { dueIn } from '../pipelines/pipeline.js';
import { type JobPassContext, markRunDue } from './job-pass.js';

/** How often a submitted job is looked at, at most (the pipeline's interval). */
export const SUBMITTED_JOB_MIN_INTERVAL_MS = 1_000;

/** Ends the submitted job `terminating` with `reason`, and wakes what acts on it next. */
export async function failJob(
  context: Pick<JobPassContext, 'app' | 'lock' | 'job'>,
  reason: JobTerminationReason,
  message: string,
): Promise<void> {
  const { app, lock, job } = context;
  await lock.release({
    // A launch that failed on every offer leaves no instance for the job.
    instance_id: null,
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
  });
  app.wakeUps.wake('jobs-terminating');
  await markRunDue(app, job.run_id);
}

/**
 * Leaves the job `submitted`, due again after `retryAfterMs`, when it looks for an idle instance
 * first again (the one a finished job freed), then for new capacity.
 */
export async function waitForCapacity(
  context: Pick<JobPassContext, 'app' | 'lock'>,
  retryAfterMs: number,
): Promise<void> {
  await context.lock.release({
    instance_id: null,
    last_processed_at: dueIn(retryAfterMs, SUBMITTED_JOB_MIN_INTERVAL_MS),
  });
}
