/**
 * Status and termination-reason enums of dstack (`core/models/runs.py`,
 * `instances.py`, `fleets.py`, `volumes.py`, `gateways.py`), as const arrays,
 * string unions and zod schemas. Values are the wire strings.
 */
import * as z from 'zod';

export const RUN_STATUSES = [
  'pending',
  'submitted',
  'provisioning',
  'running',
  'terminating',
  'terminated',
  'failed',
  'done',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const RunStatusSchema = z.enum(RUN_STATUSES);
export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ['terminated', 'failed', 'done'];

export const JOB_STATUSES = [
  'submitted',
  'provisioning',
  'pulling',
  'running',
  'terminating',
  'terminated',
  'aborted',
  'failed',
  'done',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const JobStatusSchema = z.enum(JOB_STATUSES);
export const FINISHED_JOB_STATUSES: readonly JobStatus[] = ['terminated', 'aborted', 'failed', 'done'];

export const INSTANCE_STATUSES = [
  'pending',
  'provisioning',
  'idle',
  'busy',
  'terminating',
  'terminated',
] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];
export const InstanceStatusSchema = z.enum(INSTANCE_STATUSES);
/** dstack counts terminating as finished for instances: it takes no new jobs. */
export const FINISHED_INSTANCE_STATUSES: readonly InstanceStatus[] = ['terminating', 'terminated'];

export const FLEET_STATUSES = ['submitted', 'active', 'terminating', 'terminated', 'failed'] as const;
export type FleetStatus = (typeof FLEET_STATUSES)[number];
export const FleetStatusSchema = z.enum(FLEET_STATUSES);
export const FINISHED_FLEET_STATUSES: readonly FleetStatus[] = ['terminated', 'failed'];

export const VOLUME_STATUSES = ['submitted', 'provisioning', 'active', 'failed'] as const;
export type VolumeStatus = (typeof VOLUME_STATUSES)[number];
export const VolumeStatusSchema = z.enum(VOLUME_STATUSES);
export const FINISHED_VOLUME_STATUSES: readonly VolumeStatus[] = ['failed'];

export const GATEWAY_STATUSES = ['submitted', 'provisioning', 'running', 'failed'] as const;
export type GatewayStatus = (typeof GATEWAY_STATUSES)[number];
export const GatewayStatusSchema = z.enum(GATEWAY_STATUSES);
export const FINISHED_GATEWAY_STATUSES: readonly GatewayStatus[] = ['failed'];

export const GATEWAY_REPLICA_STATUSES = [
  'submitted',
  'provisioning',
  'running',
  'failed',
  'terminating',
  'terminated',
] as const;
export type GatewayReplicaStatus = (typeof GATEWAY_REPLICA_STATUSES)[number];
export const GatewayReplicaStatusSchema = z.enum(GATEWAY_REPLICA_STATUSES);
export const FINISHED_GATEWAY_REPLICA_STATUSES: readonly GatewayReplicaStatus[] = ['failed', 'terminated'];

export function isRunFinished(status: RunStatus): boolean {
  return FINISHED_RUN_STATUSES.includes(status);
}
export function isJobFinished(status: JobStatus): boolean {
  return FINISHED_JOB_STATUSES.includes(status);
}
/** True for terminating and terminated (dstack's `InstanceStatus.finished_statuses`). */
export function isInstanceFinished(status: InstanceStatus): boolean {
  return FINISHED_INSTANCE_STATUSES.includes(status);
}
/** Idle or busy: the instance is up and reachable for jobs. */
export function isInstanceAvailable(status: InstanceStatus): boolean {
  return status === 'idle' || status === 'busy';
}
export function isFleetFinished(status: FleetStatus): boolean {
  return FINISHED_FLEET_STATUSES.includes(status);
}
export function isVolumeFinished(status: VolumeStatus): boolean {
  return FINISHED_VOLUME_STATUSES.includes(status);
}
export function isGatewayFinished(status: GatewayStatus): boolean {
  return FINISHED_GATEWAY_STATUSES.includes(status);
}
export function isGatewayReplicaFinished(status: GatewayReplicaStatus): boolean {
  return FINISHED_GATEWAY_REPLICA_STATUSES.includes(status);
}

/** Profile `retry.on_events` values. */
export const RETRY_EVENTS = ['no-capacity', 'interruption', 'error'] as const;
export type RetryEvent = (typeof RETRY_EVENTS)[number];
export const RetryEventSchema = z.enum(RETRY_EVENTS);

const RUN_TERMINATION_REASON_STATUS = {
  all_jobs_done: 'done',
  job_failed: 'failed',
  retry_limit_exceeded: 'failed',
  stopped_by_user: 'terminated',
  aborted_by_user: 'terminated',
  server_error: 'failed',
  gateway_error: 'failed',
} as const satisfies Record<string, RunStatus>;

export type RunTerminationReason = keyof typeof RUN_TERMINATION_REASON_STATUS;
export const RUN_TERMINATION_REASONS = Object.keys(RUN_TERMINATION_REASON_STATUS) as [
  RunTerminationReason,
  ...RunTerminationReason[],
];
export const RunTerminationReasonSchema = z.enum(RUN_TERMINATION_REASONS);

/** The final run status a termination reason leads to (`RunTerminationReason.to_status`). */
export function runTerminationReasonToStatus(reason: RunTerminationReason): RunStatus {
  return RUN_TERMINATION_REASON_STATUS[reason];
}

const JOB_TERMINATION_REASON_STATUS = {
  // Set by the server
  failed_to_start_due_to_no_capacity: 'failed',
  interrupted_by_no_capacity: 'failed',
  instance_unreachable: 'failed',
  waiting_instance_limit_exceeded: 'failed',
  waiting_runner_limit_exceeded: 'failed',
  terminated_by_user: 'terminated',
  volume_error: 'failed',
  gateway_error: 'failed',
  scaled_down: 'terminated',
  done_by_runner: 'done',
  aborted_by_user: 'aborted',
  terminated_by_server: 'terminated',
  inactivity_duration_exceeded: 'terminated',
  terminated_due_to_utilization_policy: 'terminated',
  // Set by the runner
  container_exited_with_error: 'failed',
  ports_binding_failed: 'failed',
  creating_container_error: 'failed',
  executor_error: 'failed',
  max_duration_exceeded: 'terminated',
  log_quota_exceeded: 'failed',
} as const satisfies Record<string, JobStatus>;

export type JobTerminationReason = keyof typeof JOB_TERMINATION_REASON_STATUS;
export const JOB_TERMINATION_REASONS = Object.keys(JOB_TERMINATION_REASON_STATUS) as [
  JobTerminationReason,
  ...JobTerminationReason[],
];
export const JobTerminationReasonSchema = z.enum(JOB_TERMINATION_REASONS);

/** The final job status a termination reason leads to (`JobTerminationReason.to_status`). */
export function jobTerminationReasonToStatus(reason: JobTerminationReason): JobStatus {
  return JOB_TERMINATION_REASON_STATUS[reason];
}

/**
 * The retry event a job termination reason triggers, or null when it is not
 * retried: no-capacity for `failed_to_start_due_to_no_capacity`, interruption
 * for `interrupted_by_no_capacity`, error for any other reason ending in failed.
 */
export function jobTerminationReasonToRetryEvent(reason: JobTerminationReason): RetryEvent | null {
  if (reason === 'failed_to_start_due_to_no_capacity') return 'no-capacity';
  if (reason === 'interrupted_by_no_capacity') return 'interruption';
  return jobTerminationReasonToStatus(reason) === 'failed' ? 'error' : null;
}

/**
 * A job submission's short status, as `dstack ps` shows it (dstack's `_get_job_status_message`):
 * `exited (N)` for a job that ended by itself, `no offers` for one that found no capacity,
 * `interrupted` for a spot instance taken back, `error` for any other failure, `stopped` or
 * `aborted` for one the user ended; else the status itself.
 */
export function jobStatusMessage(submission: {
  status: JobStatus;
  termination_reason?: JobTerminationReason | null;
  exit_status?: number | null;
}): string {
  const { status, termination_reason: reason } = submission;
  if (status === 'done') return 'exited (0)';
  if (status === 'failed') {
    if (reason === 'container_exited_with_error') return `exited (${submission.exit_status ?? '?'})`;
    if (reason === 'failed_to_start_due_to_no_capacity') return 'no offers';
    if (reason === 'interrupted_by_no_capacity') return 'interrupted';
    return 'error';
  }
  if (status === 'terminated' && reason === 'terminated_by_user') return 'stopped';
  if (status === 'terminated' && reason === 'aborted_by_user') return 'aborted';
  return status;
}

/** The job termination reason set on unfinished jobs when their run terminates. */
export function runTerminationReasonToJobTerminationReason(
  reason: RunTerminationReason,
): JobTerminationReason {
  switch (reason) {
    case 'all_jobs_done':
      return 'done_by_runner';
    case 'stopped_by_user':
      return 'terminated_by_user';
    case 'aborted_by_user':
      return 'aborted_by_user';
    default:
      return 'terminated_by_server';
  }
}

export const INSTANCE_TERMINATION_REASONS = [
  'terminated_by_user',
  'idle_timeout',
  'provisioning_timeout',
  'error',
  'job_finished',
  'unreachable',
  'no_offers',
  'master_failed',
  'max_instances_limit',
  'fleet_spec_mismatch',
  'no_balance',
] as const;
export type InstanceTerminationReason = (typeof INSTANCE_TERMINATION_REASONS)[number];
export const InstanceTerminationReasonSchema = z.enum(INSTANCE_TERMINATION_REASONS);

// Companion objects: `RunStatus.isFinished(s)`, `JobTerminationReason.toStatus(r)`, …
// They share their names with the types, as an enum would.

export const RunStatus = {
  values: RUN_STATUSES,
  finished: FINISHED_RUN_STATUSES,
  isFinished: isRunFinished,
} as const;
export const JobStatus = {
  values: JOB_STATUSES,
  finished: FINISHED_JOB_STATUSES,
  isFinished: isJobFinished,
} as const;
export const InstanceStatus = {
  values: INSTANCE_STATUSES,
  finished: FINISHED_INSTANCE_STATUSES,
  isFinished: isInstanceFinished,
  isAvailable: isInstanceAvailable,
} as const;
export const FleetStatus = {
  values: FLEET_STATUSES,
  finished: FINISHED_FLEET_STATUSES,
  isFinished: isFleetFinished,
} as const;
export const VolumeStatus = {
  values: VOLUME_STATUSES,
  finished: FINISHED_VOLUME_STATUSES,
  isFinished: isVolumeFinished,
} as const;
export const GatewayStatus = {
  values: GATEWAY_STATUSES,
  finished: FINISHED_GATEWAY_STATUSES,
  isFinished: isGatewayFinished,
} as const;
export const RunTerminationReason = {
  values: RUN_TERMINATION_REASONS,
  toStatus: runTerminationReasonToStatus,
  toJobTerminationReason: runTerminationReasonToJobTerminationReason,
} as const;
export const JobTerminationReason = {
  values: JOB_TERMINATION_REASONS,
  toStatus: jobTerminationReasonToStatus,
  toRetryEvent: jobTerminationReasonToRetryEvent,
} as const;
