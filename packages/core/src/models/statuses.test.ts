import { describe, expect, it } from 'vitest';
import {
  InstanceStatus,
  isJobFinished,
  isRunFinished,
  JOB_TERMINATION_REASONS,
  JobStatus,
  JobTerminationReason,
  jobStatusMessage,
  RUN_TERMINATION_REASONS,
  RunStatus,
  RunTerminationReason,
} from './statuses.js';

describe('statuses', () => {
  it('knows which statuses are finished', () => {
    expect(RunStatus.values.filter(isRunFinished)).toEqual(['terminated', 'failed', 'done']);
    expect(JobStatus.values.filter(isJobFinished)).toEqual(['terminated', 'aborted', 'failed', 'done']);
    expect(InstanceStatus.isFinished('terminating')).toBe(true);
    expect(InstanceStatus.isFinished('idle')).toBe(false);
    expect(InstanceStatus.isAvailable('busy')).toBe(true);
  });

  it('maps run termination reasons to statuses', () => {
    expect(RunTerminationReason.toStatus('all_jobs_done')).toBe('done');
    expect(RunTerminationReason.toStatus('job_failed')).toBe('failed');
    expect(RunTerminationReason.toStatus('stopped_by_user')).toBe('terminated');
    expect(RunTerminationReason.toStatus('aborted_by_user')).toBe('terminated');
    expect(RunTerminationReason.toStatus('retry_limit_exceeded')).toBe('failed');
    expect(RunTerminationReason.toJobTerminationReason('aborted_by_user')).toBe('aborted_by_user');
    expect(RunTerminationReason.toJobTerminationReason('job_failed')).toBe('terminated_by_server');
    for (const reason of RUN_TERMINATION_REASONS) {
      expect(RunStatus.isFinished(RunTerminationReason.toStatus(reason))).toBe(true);
    }
  });

  it('maps job termination reasons to statuses and retry events', () => {
    expect(JobTerminationReason.toStatus('done_by_runner')).toBe('done');
    expect(JobTerminationReason.toStatus('aborted_by_user')).toBe('aborted');
    expect(JobTerminationReason.toStatus('max_duration_exceeded')).toBe('terminated');
    expect(JobTerminationReason.toRetryEvent('failed_to_start_due_to_no_capacity')).toBe('no-capacity');
    expect(JobTerminationReason.toRetryEvent('interrupted_by_no_capacity')).toBe('interruption');
    expect(JobTerminationReason.toRetryEvent('container_exited_with_error')).toBe('error');
    expect(JobTerminationReason.toRetryEvent('terminated_by_user')).toBeNull();
    for (const reason of JOB_TERMINATION_REASONS) {
      expect(JobStatus.isFinished(JobTerminationReason.toStatus(reason))).toBe(true);
    }
  });
});

describe('jobStatusMessage', () => {
  it.each([
    [{ status: 'done', termination_reason: 'done_by_runner' }, 'exited (0)'],
    [{ status: 'failed', termination_reason: 'container_exited_with_error', exit_status: 3 }, 'exited (3)'],
    [{ status: 'failed', termination_reason: 'failed_to_start_due_to_no_capacity' }, 'no offers'],
    [{ status: 'failed', termination_reason: 'interrupted_by_no_capacity' }, 'interrupted'],
    [{ status: 'failed', termination_reason: 'executor_error' }, 'error'],
    [{ status: 'terminated', termination_reason: 'terminated_by_user' }, 'stopped'],
    [{ status: 'terminated', termination_reason: 'aborted_by_user' }, 'aborted'],
    [{ status: 'terminated', termination_reason: 'terminated_by_server' }, 'terminated'],
    [{ status: 'running' }, 'running'],
  ] as const)('%o is %s', (submission, message) => {
    expect(jobStatusMessage(submission)).toBe(message);
  });
});
