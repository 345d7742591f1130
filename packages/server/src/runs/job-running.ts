/**
 * Jobs in `provisioning`, `pulling` and `running`: submit the task to the shim
 * once the instance answers, hand the job to the runner once the task runs,
 * then pull the runner's state and logs until the job ends.
 */
import {
  formatUnixUser,
  JOB_TERMINATION_REASONS,
  type JobProvisioningData,
  type JobRuntimeData,
  type JobSpec,
  type JobTerminationReason,
  type RemoteRepoCreds,
} from '@dstack/core';
import {
  DSTACK_RUNNER_HTTP_PORT,
  type RunnerPullResponse,
  type RunnerSubmitBody,
  type TaskConfigInput,
  type TaskInfo,
} from '@dstack/core/agent-protocol';
import { AgentApiError } from '@dstack/runner';
import type { ShimClient } from '@dstack/shim';
import { projectOf } from '../accounts/projects.js';
import { runnerClientFor, shimClientFor } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import {
  instanceProvisioningDataOf,
  jobProvisioningDataColumn,
  jobProvisioningDataOf,
  jobRuntimeDataColumn,
  jobRuntimeDataOf,
  jobSpecOf,
  runSpecOf,
  type StoredRunSpec,
} from '../db/json-columns.js';
import type { InstancesTable, JobsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { instanceRowOf } from '../fleets/instance-rows.js';
import { storeRunnerLogs } from '../logs/logs.js';
import { sampleJobMetricsWhenDue } from '../metrics/job-metrics-sampling.js';
import type { PipelineDefinition } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { codeUnpackedLimitOf } from '../repos/code-unpacked-limit.js';
import { archiveBlobs } from '../repos/file-archives.js';
import { codeBlob, findRepo, repoCredsFor } from '../repos/repos.js';
import {
  referencesSecrets,
  resolveJobSpecSecrets,
  SecretReferenceError,
} from '../secrets/secret-references.js';
import { projectSecretValues } from '../secrets/secrets.js';
import { attachJobVolumes, JobVolumeError, type TaskMounts } from '../volumes/job-volumes.js';
import { endShownLater, rememberRunningSince } from './attach-window.js';
import {
  type ClusterNode,
  clusterInfoOf,
  clusterNodesOf,
  clusterWaitReason,
  type StartupOrder,
} from './cluster-gang.js';
import { gpuUtilizationVerdict } from './gpu-utilization.js';
import { type JobPassContext, markRunDue, runRowOf } from './job-pass.js';
import { type JobRuntime, jobRuntimeOf } from './job-runtime.js';
import { hostJobCommands } from './job-specs.js';
import { markServiceGatewayDue } from './service-gateway.js';

const MIN_INTERVAL_MS = 1_000;
/** While a job starts, look again this soon. */
const STARTING_POLL_MS = 100;
/** A running job whose agent does not answer this long is given up (dstack: 2 minutes). */
const UNREACHABLE_LIMIT_MS = 120_000;
/** Provisioning deadline when the instance has none (dstack's default provisioning timeout). */
const DEFAULT_PROVISIONING_MS = 600_000;
const MAX_PULLS_PER_PASS = 20;
/** How soon a node waiting for the rest of its cluster looks again. */
const CLUSTER_POLL_MS = 250;
/** A pass's limit: a few agent calls, each with its own 30 s deadline. */
const PROCESS_TIMEOUT_MS = 60_000;

interface JobContext extends JobPassContext {
  instance: InstancesTable;
  provisioningData: JobProvisioningData;
  /** The nodes of the job's cluster, in rank order, for a multi-node job about to start; else empty. */
  clusterNodes: ClusterNode[];
}

function asTerminationReason(
  value: string | null | undefined,
  fallback: JobTerminationReason,
): JobTerminationReason {
  return value && (JOB_TERMINATION_REASONS as readonly string[]).includes(value)
    ? (value as JobTerminationReason)
    : fallback;
}

async function terminate(
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

async function retrySoonOrTimeOut(context: JobContext, why: string): Promise<void> {
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
function doneBefore(error: unknown): null {
  if (error instanceof AgentApiError && error.statusCode === 409) return null;
  throw error;
}

/** The job's runtime data, as placing it (its share of the instance) or starting it left it. */
function runtimeDataOf(job: JobsTable): JobRuntimeData | null {
  return jobRuntimeDataOf(job);
}

/** Whether the job's runner was reached: starting the job records the runner's port. */
export function runnerWasStarted(job: JobsTable): boolean {
  return runtimeDataOf(job)?.ports != null;
}

/**
 * The resources the shim gives the task: a job on part of an instance gets its share's GPUs,
 * CPUs and memory (bytes); a job on a whole instance gets every GPU when it asks for any, and
 * no CPU or memory limit.
 */
export function taskResourcesOf(
  jobSpec: JobSpec,
  runtime: JobRuntimeData | null,
): { gpu: number; cpu: number; memory: number } {
  if (runtime?.gpu != null) {
    return {
      gpu: runtime.gpu,
      cpu: runtime.cpu ?? 0,
      memory: Math.round((runtime.memory ?? 0) * 1024 ** 3),
    };
  }
  return { gpu: (jobSpec.requirements.resources.gpu?.count.min ?? 0) > 0 ? -1 : 0, cpu: 0, memory: 0 };
}

/**
 * The job spec as the agents get it: `${{ secrets.NAME }}` replaced by the secrets' values. Read
 * at each submit and never stored: the job row keeps the references. Null when a secret is gone
 * (deleted since the run was accepted): the job is terminated, as dstack does, naming the field
 * and the secret, never a value.
 */
async function agentJobSpec(context: JobContext, runtime: JobRuntime = 'container'): Promise<JobSpec | null> {
  const stored = jobSpecOf(context.job);
  // The stored spec has dstack's command line for a container of its image (job-runtime.ts).
  const jobSpec =
    runtime === 'process' ? { ...stored, commands: hostJobCommands(runSpecOf(context.run), stored) } : stored;
  // Every spec is interpolated (`$$` is an escaped `$` in any value, as in dstack); the secrets
  // are decrypted only for one that references any.
  const secrets = referencesSecrets(jobSpec)
    ? await projectSecretValues(context.app, context.job.project_id)
    : new Map<string, string>();
  try {
    return resolveJobSpecSecrets(jobSpec, secrets);
  } catch (error) {
    if (!SecretReferenceError.isInstance(error)) throw error;
    await terminate(context, 'terminated_by_server', `Secrets interpolation error: ${error.message}`);
    return null;
  }
}

/** What the runner gets besides the job spec: the repo's code and creds, the `files:` archives. */
interface JobCode {
  code: Uint8Array;
  repoCredentials: RemoteRepoCreds | null;
  archives: Map<string, Uint8Array>;
}

/**
 * The job's code as stored when the run was applied. Null when some of it is gone (the repo or
 * an archive deleted since): the job is terminated naming what is missing.
 */
async function jobCode(context: JobContext, jobSpec: JobSpec): Promise<JobCode | null> {
  const { app, run } = context;
  const runSpec = runSpecOf(run);
  const missing = (what: string) =>
    terminate(context, 'terminated_by_server', `${what} is no longer on the server`).then(() => null);
  let code: Uint8Array = new Uint8Array();
  let repoCredentials: RemoteRepoCreds | null = null;
  const repoId = runSpec.repo_id;
  if (jobSpec.repo_data && jobSpec.repo_data.repo_type !== 'virtual' && repoId) {
    const repo = await findRepo(app, run.project_id, repoId);
    if (!repo) return missing(`repo ${repoId}`);
    if (jobSpec.repo_code_hash) {
      const blob = await codeBlob(app, run.project_id, repoId, jobSpec.repo_code_hash);
      if (!blob) return missing(`the code ${jobSpec.repo_code_hash} of repo ${repoId}`);
      code = blob;
    }
    repoCredentials = await repoCredsFor(app, repo.id, run.user_id);
    if (jobSpec.repo_data.repo_type === 'remote' && !repoCredentials) {
      return missing(`the clone URL of repo ${repoId} (repos/init with repo_creds)`);
    }
  }
  const mappings = jobSpec.file_archives ?? [];
  const archives = await archiveBlobs(app, run.user_id, mappings);
  const lost = mappings.find((mapping) => !archives.has(mapping.id));
  if (lost) return missing(`file archive ${lost.id} (for ${lost.path})`);
  return { code, repoCredentials, archives };
}

/** The shim of the job's instance; its calls end with the pass (`lock.signal`). */
function jobShim(context: JobContext): Promise<ShimClient> {
  const { app, project, provisioningData, instance, lock } = context;
  return shimClientFor(app, project, provisioningData, instance.id, lock.signal);
}

/**
 * The job's volumes attached to its instance, and what the task mounts; null when they cannot be
 * had: the job then ends `volume_error` (its end detaches what was attached).
 */
async function taskMounts(context: JobContext, jobSpec: JobSpec): Promise<TaskMounts | null> {
  const { app, job, instance, provisioningData } = context;
  try {
    return await attachJobVolumes(app, {
      projectId: job.project_id,
      jobId: job.id,
      jobSpec,
      instance,
      provisioningData,
    });
  } catch (error) {
    if (!(error instanceof JobVolumeError)) throw error;
    await terminate(context, 'volume_error', error.message);
    return null;
  }
}

/** provisioning → pulling: the shim accepted the task. */
async function submitTask(context: JobContext): Promise<void> {
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
async function startJob(context: JobContext): Promise<void> {
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
      code_unpacked_limit: codeUnpackedLimitOf(app.settings),
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
    await context.lock.release({
      status: 'running',
      ...jobAddressUpdate(job, provisioningData),
      job_runtime_data: jobRuntimeDataColumn.encode(runtimeData),
      runner_timestamp: 0,
      last_processed_at: dueIn(STARTING_POLL_MS * 2, MIN_INTERVAL_MS),
    });
    await markRunDue(app, job.run_id);
    await markServiceGatewayDue(app, job.run_id);
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

export function runnerPortOf(job: JobsTable): number {
  const runtime = runtimeDataOf(job);
  return runtime?.ports?.[String(DSTACK_RUNNER_HTTP_PORT)] ?? DSTACK_RUNNER_HTTP_PORT;
}

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
/** The run's `startup_order` (a task's; `any` for the others and by default). */
function startupOrderOf(runSpec: StoredRunSpec): StartupOrder {
  return runSpec.configuration.startup_order ?? 'any';
}

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
async function followJob(context: JobContext): Promise<void> {
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
    last_processed_at: dueIn(pullIntervalMs(job, Date.now()), MIN_INTERVAL_MS),
  });
}

/**
 * How soon to pull a running job again: a young submission (a short task on a warm instance)
 * is pulled every few hundred milliseconds, so its end is reported promptly; from a few
 * seconds of age on, every second.
 */
export function pullIntervalMs(job: Pick<JobsTable, 'submitted_at'>, now: number): number {
  // Whole milliseconds: it becomes a time column's value (whole-numbers.ts rounds any write as well).
  return Math.min(MIN_INTERVAL_MS, Math.max(STARTING_POLL_MS * 2, Math.round((now - job.submitted_at) / 4)));
}

/**
 * Why a job ends whose instance ended first. A container backend's rental (the job's own
 * container, `dockerized: false`) that failed before it had an address (its image could not be
 * pulled, Docker could not create its container: the backend's `ProvisioningError`) failed as
 * the job's container: `creating_container_error`, what the shim reports for the same failure
 * on a VM. Any other instance lost under a job is dstack's `waiting_instance_limit_exceeded`.
 */
function lostInstanceReason(instance: InstancesTable): JobTerminationReason {
  const data = instanceProvisioningDataOf(instance);
  const containerFailed =
    instance.termination_reason === 'error' && data !== null && !data.dockerized && !data.hostname;
  return containerFailed ? 'creating_container_error' : 'waiting_instance_limit_exceeded';
}

export function jobRunningPipeline(app: AppContext): PipelineDefinition<'jobs'> {
  return {
    name: 'jobs-running',
    table: 'jobs',
    statuses: ['provisioning', 'pulling', 'running'],
    minIntervalMs: MIN_INTERVAL_MS,
    // A pass mostly waits for the agents (several HTTP round trips): many run at once.
    workers: 100,
    // A pass that outlasts this (agents that do not answer) frees its worker; its calls are aborted.
    processTimeoutMs: PROCESS_TIMEOUT_MS,
    async process(job, lock) {
      const run = await runRowOf(app, job.run_id);
      if (run.status === 'terminating') return;
      const instance = await instanceRowOf(app, job.instance_id);
      if (!instance || ['terminating', 'terminated'].includes(instance.status)) {
        await terminate(
          { app, lock, job },
          instance ? lostInstanceReason(instance) : 'waiting_instance_limit_exceeded',
          instance?.termination_reason_message ?? 'the instance is gone',
        );
        return;
      }
      const provisioningData = instanceProvisioningDataOf(instance);
      if (
        !provisioningData?.hostname ||
        instance.status === 'provisioning' ||
        instance.status === 'pending'
      ) {
        // The instance pipeline wakes us when the instance is up.
        return;
      }
      const project = await projectOf(app, job.project_id);
      let clusterNodes: ClusterNode[] = [];
      if (job.status !== 'running' && jobSpecOf(job).requirements.multinode) {
        // A node of a cluster starts only with the others (cluster-gang.ts).
        clusterNodes = await clusterNodesOf(app, job);
        const order = job.status === 'provisioning' ? startupOrderOf(runSpecOf(run)) : 'any';
        if (clusterWaitReason(job.job_num, clusterNodes, order) !== null) {
          await lock.release({ last_processed_at: dueIn(CLUSTER_POLL_MS, MIN_INTERVAL_MS) });
          return;
        }
      }
      const context: JobContext = { app, job, lock, run, project, instance, provisioningData, clusterNodes };
      if (job.status === 'provisioning') {
        if (provisioningData.dockerized) await submitTask(context);
        else await startJob(context);
      } else if (job.status === 'pulling') {
        await startJob(context);
      } else {
        await followJob(context);
      }
    },
  };
}
