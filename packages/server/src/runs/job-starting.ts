/**
 * Starting a job on its instance: provisioning → pulling (the shim accepted the task), then
 * pulling → running (the task runs and the runner has the job, its code and archives).
 */

import { formatUnixUser, type JobProvisioningData, type JobRuntimeData } from '@dstack/core';
import {
  DSTACK_RUNNER_HTTP_PORT,
  type RunnerSubmitBody,
  type TaskConfigInput,
  type TaskInfo,
} from '@dstack/core/agent-protocol';
import type { ShimClient } from '@dstack/shim';
import { runnerClientFor, shimClientFor } from '../agents/agent-clients.js';
import {
  jobProvisioningDataColumn,
  jobProvisioningDataOf,
  jobRuntimeDataColumn,
  runSpecOf,
} from '../db/json-columns.js';
import type { JobsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { dueIn } from '../pipelines/pipeline.js';
import { codeUnpackedLimitOf } from '../repos/code-settings.js';
import { markServiceGatewayDue } from '../services/service-gateway.js';
import { rememberRunningSince } from './attach-window.js';
import { clusterInfoOf } from './cluster-gang.js';
import { agentJobSpec, jobCode, taskMounts, taskResourcesOf } from './job-agent-inputs.js';
import { runtimeDataOf } from './job-runner-port.js';
import {
  asTerminationReason,
  doneBefore,
  type JobContext,
  MIN_INTERVAL_MS,
  retrySoonOrTimeOut,
  STARTING_POLL_MS,
  terminate,
} from './job-running-context.js';
import { jobRuntimeOf } from './job-runtime.js';
import { runFollowsJob } from './run-follows-job.js';

/** The shim of the job's instance; its calls end with the pass (`lock.signal`). */
function jobShim(context: JobContext): Promise<ShimClient> {
  const { app, project, provisioningData, instance, lock } = context;
  return shimClientFor(app, project, provisioningData, instance.id, lock.signal);
}

/** provisioning → pulling: the shim accepted the task. */
export async function submitTask(context: JobContext): Promise<void> {
  const { job, provisioningData } = context;
  const jobSpec = await agentJobSpec(context);
  if (!jobSpec) return;
  const mounts = await taskMounts(context, jobSpec);
  if (!mounts) return;
  try {
    const shim = await jobShim(context);
    const task: TaskConfigInput = {
      id: job.id,
      name: job.job_name,
      image_name: jobSpec.image_name,
      registry_username: jobSpec.registry_auth?.username ?? '',
      registry_password: jobSpec.registry_auth?.password ?? '',
      // Empty: the image's own USER (root if it has none), or the shim's own user without containers.
      container_user: jobSpec.user ? formatUnixUser(jobSpec.user) : '',
      privileged: jobSpec.privileged,
      ...taskResourcesOf(jobSpec, runtimeDataOf(job)),
      network_mode: 'host',
      // `resources.shm_size` is in GB; the shim takes bytes (0: the runtime's default).
      shm_size: Math.round((jobSpec.requirements.resources.shm_size ?? 0) * 1024 ** 3),
      env: jobSpec.env,
      volumes: mounts.volumes,
      volume_mounts: mounts.volume_mounts,
      instance_mounts: mounts.instance_mounts,
    };
    await shim.submitTask(task).catch(doneBefore);
  } catch (error) {
    await retrySoonOrTimeOut(context, errorMessage(error));
    return;
  }
  const placed = runtimeDataOf(job);
  await context.lock.release({
    status: 'pulling',
    job_provisioning_data: jobProvisioningDataColumn.encode(provisioningData),
    ...(placed && mounts.volumeNames.length > 0
      ? { job_runtime_data: jobRuntimeDataColumn.encode({ ...placed, volume_names: mounts.volumeNames }) }
      : {}),
    last_processed_at: dueIn(STARTING_POLL_MS, MIN_INTERVAL_MS),
  });
  // The run is `provisioning` for a pulling job as for a provisioning one: nothing for it to follow.
}

/** pulling → running: the task runs; give the job to its runner. */
export async function startJob(context: JobContext): Promise<void> {
  const { app, job, run, project, provisioningData } = context;
  let runnerPort = DSTACK_RUNNER_HTTP_PORT;
  // The shim's task, on an instance with a shim: what its runtime started (job-runtime.ts).
  let task: TaskInfo | null = null;
  try {
    if (provisioningData.dockerized) {
      const shim = await jobShim(context);
      task = await shim.getTask(job.id);
      if (!task) throw new Error('the shim does not know the task');
      if (task.status === 'terminated') {
        await terminate(
          context,
          asTerminationReason(task.termination_reason, 'creating_container_error'),
          task.termination_message ?? 'the task ended before the job started',
        );
        return;
      }
      if (task.status !== 'running') {
        await context.lock.release({ last_processed_at: dueIn(STARTING_POLL_MS, MIN_INTERVAL_MS) });
        return;
      }
      runnerPort =
        task.ports.find((port) => port.container === DSTACK_RUNNER_HTTP_PORT)?.host ??
        DSTACK_RUNNER_HTTP_PORT;
    }
    // No healthcheck first: a runner that is not up yet fails the submit just the same.
    const runner = await runnerClientFor(
      app,
      project,
      provisioningData,
      runnerPort,
      job,
      context.lock.signal,
    );
    const backend = await app.backends.computeOf(context.instance.project_id, context.instance.backend);
    const jobSpec = await agentJobSpec(context, jobRuntimeOf(backend, task));
    if (!jobSpec) return;
    // A container backend's launch (runJob) mounted the job's volumes itself; their attachments
    // are recorded all the same, as dstack records them for every job: the volume shows the
    // instance using it, and is neither cleaned up nor given to another job meanwhile.
    const containerMounts = provisioningData.dockerized ? null : await taskMounts(context, jobSpec);
    if (!provisioningData.dockerized && !containerMounts) return;
    const user = await app.db
      .selectFrom('users')
      .select('name')
      .where('id', '=', run.user_id)
      .executeTakeFirst();
    const placed = runtimeDataOf(job);
    const runSpec = runSpecOf(run);
    const submission: RunnerSubmitBody = {
      run: {
        id: run.id,
        run_name: run.run_name,
        project_name: project.name,
        user: user?.name ?? '',
        // The runner's SSH server lets in the holder of this key (dstack's field; may be several lines).
        run_spec: { ssh_key_pub: runSpec.ssh_key_pub ?? null },
      },
      job_spec: jobSpec,
      job_submission: { id: job.id, submission_num: job.submission_num },
      cluster_info: clusterInfoOf({ provisioningData, runtimeData: placed }, context.clusterNodes),
      secrets: {},
      // The server's SSH proxy logs in to the job with the project key for the user it let in.
      ssh_authorized_keys: [project.ssh_public_key],
      // The runner stops unpacking the code or a files: archive past it (a gzip bomb).
      code_unpacked_limit: codeUnpackedLimitOf(app.settings.code),
    };
    const code = await jobCode(context, jobSpec);
    if (!code) return;
    submission.repo_credentials = code.repoCredentials;
    // One runner per job: a submit, upload or run it refuses (409) was this job's own.
    await runner.submit(submission).catch(doneBefore);
    for (const [id, bytes] of code.archives) await runner.uploadArchive(id, bytes).catch(doneBefore);
    await runner.uploadCode(code.code).catch(doneBefore);
    // null: that lost pass started the job; its working directory and user are unknown.
    const started = await runner.run().catch(doneBefore);
    const runtimeData: JobRuntimeData = {
      // The job's share of the instance, as placing it recorded it.
      ...placed,
      ...(containerMounts && containerMounts.volumeNames.length > 0
        ? { volume_names: containerMounts.volumeNames }
        : {}),
      network_mode: 'host',
      ports: { [String(DSTACK_RUNNER_HTTP_PORT)]: runnerPort },
      offer: placed?.offer ?? null,
      working_dir: started?.working_dir ?? null,
      username: started?.username ?? null,
    };
    rememberRunningSince(app, job, Date.now());
    const released = await context.lock.release({
      status: 'running',
      ...jobAddressUpdate(job, provisioningData),
      job_runtime_data: jobRuntimeDataColumn.encode(runtimeData),
      runner_timestamp: 0,
      last_processed_at: dueIn(STARTING_POLL_MS * 2, MIN_INTERVAL_MS),
    });
    await runFollowsJob(app, context, 'running', released);
    await markServiceGatewayDue(app, run);
  } catch (error) {
    await retrySoonOrTimeOut(context, errorMessage(error));
  }
}

/**
 * The job's provisioning data with the instance's address as it is now: a runJob backend's
 * launch returned it without one (a pod's IP, its jump pod as `ssh_proxy` came later), and
 * dstack's job shows them. The rest (the job's share of the instance) stays the job's.
 */
function jobAddressUpdate(job: JobsTable, instance: JobProvisioningData): { job_provisioning_data?: string } {
  const own = jobProvisioningDataOf(job);
  if (own === null) return {};
  const { hostname, internal_ip, ssh_port, ssh_proxy } = instance;
  return {
    job_provisioning_data: jobProvisioningDataColumn.encode({
      ...own,
      hostname,
      internal_ip,
      ssh_port,
      ssh_proxy,
    }),
  };
}
