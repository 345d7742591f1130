/** Database rows → the API models of @dstack/core (Run, JobSubmission, Fleet, Instance). */
import {
  type Job,
  type JobConnectionInfo,
  type JobSubmission,
  jobStatusMessage,
  type Run,
} from '@dstack/core';
import type { SshProxyAddress } from '../context.js';
import { jobProvisioningDataOf, jobRuntimeDataOf, jobSpecOf, runSpecOf } from '../db/json-columns.js';
import type { InstancesTable, JobsTable, RunsTable } from '../db/schema.js';
import { isoTime } from '../http/iso-time.js';
import { serviceSpecOf } from '../services/service-spec.js';

export function jobSubmissionOf(
  job: JobsTable,
  instance?: Pick<InstancesTable, 'name'> | null,
): JobSubmission {
  return {
    id: job.id,
    submission_num: job.submission_num,
    submitted_at: isoTime(job.submitted_at) as string,
    last_processed_at: isoTime(job.last_processed_at || job.submitted_at) as string,
    finished_at: isoTime(job.finished_at),
    status: job.status,
    status_message: jobStatusMessage(job),
    termination_reason: job.termination_reason,
    termination_reason_message: job.termination_reason_message,
    exit_status: job.exit_status,
    inactivity_secs: job.inactivity_secs,
    job_provisioning_data: jobProvisioningDataOf(job),
    job_runtime_data: jobRuntimeDataOf(job),
    instance_name: instance?.name ?? null,
    fleet_name: null,
  };
}

/** The job's upstream id at the SSH proxy (dstack's): its id in lowercase hex without dashes. */
export function sshProxyUpstreamIdOf(jobId: string): string {
  return jobId.replaceAll('-', '').toLowerCase();
}

/**
 * How dstack's clients reach a running job: through the server's SSH proxy, logging in as the
 * job's upstream id (dstack's `get_job_connection_info`). The attached name is the run's for its
 * first job, else the job's, as dstack's client names the host in its SSH config.
 */
export function jobConnectionInfoOf(
  job: JobsTable,
  runName: string,
  sshProxy: SshProxyAddress,
): JobConnectionInfo {
  const upstreamId = sshProxyUpstreamIdOf(job.id);
  const attachedHost = job.job_num === 0 && job.replica_num === 0 ? runName : job.job_name;
  return {
    ide_name: null,
    attached_ide_url: null,
    proxied_ide_url: null,
    attached_ssh_command: ['ssh', attachedHost],
    proxied_ssh_command: [
      'ssh',
      `${upstreamId}@${sshProxy.hostname}`,
      ...(sshProxy.port === 22 ? [] : ['-p', String(sshProxy.port)]),
    ],
    sshproxy_hostname: sshProxy.hostname,
    sshproxy_port: sshProxy.port,
    sshproxy_upstream_id: upstreamId,
  };
}

/**
 * Groups job rows (all submissions) into API jobs, ordered by job and replica number; a running
 * job has its connection info when the server has an SSH proxy.
 */
export function jobsOf(
  jobs: readonly JobsTable[],
  instances: ReadonlyMap<string, InstancesTable>,
  connection?: { runName: string; sshProxy: SshProxyAddress | undefined },
): Job[] {
  const byJob = new Map<string, JobsTable[]>();
  for (const job of jobs) {
    const key = `${job.replica_num}:${job.job_num}`;
    const list = byJob.get(key) ?? [];
    list.push(job);
    byJob.set(key, list);
  }
  return [...byJob.values()]
    .map((submissions) => submissions.sort((a, b) => a.submission_num - b.submission_num))
    .sort(
      (a, b) =>
        (a[0] as JobsTable).replica_num - (b[0] as JobsTable).replica_num ||
        (a[0] as JobsTable).job_num - (b[0] as JobsTable).job_num,
    )
    .map((submissions) => {
      const latest = submissions[submissions.length - 1] as JobsTable;
      const sshProxy = connection?.sshProxy;
      return {
        job_spec: jobSpecOf(latest),
        job_submissions: submissions.map((job) =>
          jobSubmissionOf(job, job.instance_id ? instances.get(job.instance_id) : null),
        ),
        job_connection_info:
          sshProxy && latest.status === 'running'
            ? jobConnectionInfoOf(latest, connection.runName, sshProxy)
            : null,
      };
    });
}

/** What a run has cost so far: each submission's price times its running time. */
function costOf(jobs: readonly JobsTable[], now: number): number {
  let cost = 0;
  for (const job of jobs) {
    const provisioning = jobProvisioningDataOf(job);
    if (!provisioning?.price) continue;
    const end = job.finished_at ?? now;
    cost += (provisioning.price * Math.max(0, end - job.submitted_at)) / 3_600_000;
  }
  return Math.round(cost * 10_000) / 10_000;
}

/**
 * The run's short status for `dstack ps` (dstack's `_get_run_status_message`): `pulling` while
 * every job pulls its image, `retrying` while a job that found no capacity waits for its retry,
 * else the status.
 */
function runStatusMessage(run: RunsTable, jobs: readonly Job[]): string {
  const latest = jobs.map((job) => job.job_submissions[job.job_submissions.length - 1]);
  if (latest.length > 0 && latest.every((submission) => submission?.status === 'pulling')) return 'pulling';
  if (run.status === 'submitted' || run.status === 'pending') {
    const retrying = jobs.some((job) => {
      const reason = job.job_submissions.findLast(
        (submission) => submission.termination_reason,
      )?.termination_reason;
      return (
        reason === 'failed_to_start_due_to_no_capacity' &&
        job.job_spec.retry?.on_events.includes('no-capacity')
      );
    });
    if (retrying) return 'retrying';
  }
  return run.status;
}

function errorOf(run: RunsTable, latest: JobsTable | undefined): string | null {
  if (!latest || !['failed', 'terminated', 'aborted'].includes(latest.status)) {
    return run.termination_reason === 'server_error' ? 'server error' : null;
  }
  return latest.termination_reason_message ?? latest.termination_reason;
}

export function runOf(
  run: RunsTable,
  projectName: string,
  userName: string,
  jobs: readonly JobsTable[],
  instances: ReadonlyMap<string, InstancesTable>,
  sshProxy?: SshProxyAddress,
): Run {
  const apiJobs = jobsOf(jobs, instances, { runName: run.run_name, sshProxy });
  const runSpec = runSpecOf(run);
  const latestRow = [...jobs].sort(
    (a, b) => b.submitted_at - a.submitted_at || b.submission_num - a.submission_num,
  )[0];
  return {
    id: run.id,
    project_name: projectName,
    user: userName,
    submitted_at: isoTime(run.submitted_at) as string,
    last_processed_at: isoTime(run.last_processed_at || run.submitted_at) as string,
    status: run.status,
    status_message: runStatusMessage(run, apiJobs),
    termination_reason: run.termination_reason,
    run_spec: runSpec,
    jobs: apiJobs,
    latest_job_submission: latestRow
      ? jobSubmissionOf(latestRow, latestRow.instance_id ? instances.get(latestRow.instance_id) : null)
      : null,
    cost: costOf(jobs, Date.now()),
    error: errorOf(run, latestRow),
    deleted: run.deleted === 1,
    next_triggered_at: run.status === 'pending' ? isoTime(run.next_triggered_at) : null,
    service: serviceSpecOf(
      runSpec,
      projectName,
      run.run_name,
      run.service_hostname ?? null,
      run.service_https === null || run.service_https === undefined ? null : run.service_https === 1,
    ),
  };
}
