/**
 * New rows of the runs and jobs tables: a run as submitted, and a job submission (the first on
 * apply, later ones by retries and replica scaling).
 */

import { type JobSpec, RUN_PRIORITY_DEFAULT } from '@dstack/core';
import { jobSpecColumn, runSpecColumn, type StoredRunSpec } from '../db/json-columns.js';
import type { JobsTable, RunsTable } from '../db/schema.js';
import { timeOrderedUuid } from '../db/time-ordered-ids.js';

/**
 * A new run row: `submitted`, unclaimed, and not due (a new run has nothing to follow until its
 * jobs move, and they mark it due then).
 */
export function newRunRow(fields: {
  id: string;
  projectId: string;
  userId: string;
  runName: string;
  runSpec: StoredRunSpec;
  now: number;
}): RunsTable {
  return {
    id: fields.id,
    project_id: fields.projectId,
    user_id: fields.userId,
    run_name: fields.runName,
    status: 'submitted',
    termination_reason: null,
    run_spec: runSpecColumn.encode(fields.runSpec),
    submitted_at: fields.now,
    last_processed_at: fields.now,
    resubmission_attempt: 0,
    next_triggered_at: null,
    fleet_id: null,
    deleted: 0,
    priority: fields.runSpec.configuration.priority ?? RUN_PRIORITY_DEFAULT,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}

export function newJobRow(
  projectId: string,
  runId: string,
  runName: string,
  jobSpec: JobSpec,
  submissionNum: number,
  now: number,
): JobsTable {
  return {
    id: timeOrderedUuid(now),
    project_id: projectId,
    run_id: runId,
    run_name: runName,
    job_num: jobSpec.job_num,
    replica_num: jobSpec.replica_num,
    job_name: jobSpec.job_name,
    submission_num: submissionNum,
    status: 'submitted',
    termination_reason: null,
    termination_reason_message: null,
    exit_status: null,
    job_spec_data: jobSpecColumn.encode(jobSpec),
    job_provisioning_data: null,
    job_runtime_data: null,
    instance_id: null,
    instance_assigned: 0,
    submitted_at: now,
    last_processed_at: 0,
    finished_at: null,
    runner_timestamp: null,
    remove_at: null,
    disconnected_at: null,
    inactivity_secs: null,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}
