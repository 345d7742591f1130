/**
 * Whether a job's runner was started and the port it listens on, as starting the job recorded
 * them in its runtime data. Small on purpose: the SSH proxy reads the port too.
 */

import type { JobRuntimeData } from '@dstack/core';
import { DSTACK_RUNNER_HTTP_PORT } from '@dstack/core/agent-protocol';
import { jobRuntimeDataOf } from '../db/json-columns.js';
import type { JobsTable } from '../db/schema.js';

/** The job's runtime data, as placing it (its share of the instance) or starting it left it. */
export function runtimeDataOf(job: JobsTable): JobRuntimeData | null {
  return jobRuntimeDataOf(job);
}

/** Whether the job's runner was reached: starting the job records the runner's port. */
export function runnerWasStarted(job: JobsTable): boolean {
  return runtimeDataOf(job)?.ports != null;
}

export function runnerPortOf(job: JobsTable): number {
  const runtime = runtimeDataOf(job);
  return runtime?.ports?.[String(DSTACK_RUNNER_HTTP_PORT)] ?? DSTACK_RUNNER_HTTP_PORT;
}
