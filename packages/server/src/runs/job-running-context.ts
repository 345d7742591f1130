/**
 * What the job-running pass's steps (job-starting.ts, job-following.ts) share: the job's context,
 * the poll intervals, ending the job, and retrying a start until the provisioning deadline.
 */

import { JOB_TERMINATION_REASONS, type JobProvisioningData, type JobTerminationReason } from '@dstack/core';
import { AgentApiError } from '@dstack/runner';
import type { InstancesTable } from '../db/schema.js';
import { dueIn } from '../pipelines/pipeline.js';
import type { ClusterNode } from './cluster-gang.js';
import type { JobPassContext } from './job-pass.js';

export const MIN_INTERVAL_MS = 1_000;
/** While a job starts, look again this soon. */
export const STARTING_POLL_MS = 100;
/** Provisioning deadline when the instance has none (dstack's default provisioning timeout). */
const DEFAULT_PROVISIONING_MS = 600_000;

export interface JobContext extends JobPassContext {
  instance: InstancesTable;
  provisioningData: JobProvisioningData;
  /** The nodes of the job's cluster, in rank order, for a multi-node job about to start; else empty. */
  clusterNodes: ClusterNode[];
}

export function asTerminationReason(
  value: string | null | undefined,
  fallback: JobTerminationReason,
): JobTerminationReason {
  return value && (JOB_TERMINATION_REASONS as readonly string[]).includes(value)
    ? (value as JobTerminationReason)
    : fallback;
}

export async function terminate(
  context: Pick<JobContext, 'app' | 'lock' | 'job'>,
  reason: JobTerminationReason,
  message: string | null,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await context.lock.release({
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
    ...extra,
  });
  context.app.wakeUps.wake('jobs-terminating');
  // The run follows the job once it has ended (job-terminating marks the run due then).
}

/**
 * When the job's agent must have started: the instance's provisioning timeout after the job was
 * submitted (dstack measures the submission's age), not the instance's own deadline, which has
 * long passed for an instance that was up before the job was placed on it.
 */
function startingDeadline(context: JobContext): number {
  const { provisioning_deadline: deadline, started_at: startedAt } = context.instance;
  const timeoutMs = deadline !== null && startedAt !== null ? deadline - startedAt : DEFAULT_PROVISIONING_MS;
  return context.job.submitted_at + timeoutMs;
}

export async function retrySoonOrTimeOut(context: JobContext, why: string): Promise<void> {
  if (Date.now() > startingDeadline(context)) {
    await terminate(
      context,
      'waiting_runner_limit_exceeded',
      `the job's agent did not start in time: ${why}`,
    );
    return;
  }
  await context.lock.release({ last_processed_at: dueIn(STARTING_POLL_MS * 5, MIN_INTERVAL_MS) });
}

/**
 * For a call that an earlier pass may have made already, its request through but its answer lost
 * (a timeout, a dropped connection): the agent refuses it with 409, and the step counts as done
 * (null), so a retried pass picks up where the lost one left off. Other errors are rethrown.
 */
export function doneBefore(error: unknown): null {
  if (error instanceof AgentApiError && error.statusCode === 409) return null;
  throw error;
}
