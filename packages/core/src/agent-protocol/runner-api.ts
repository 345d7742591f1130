/**
 * The runner's HTTP API models (dstack's `runner/internal/runner/api`): what the runner accepts
 * and answers, and what the shim and the server send it.
 * Field names are dstack's (snake_case on the wire). Request objects are loose because the
 * server sends dstack's full models, of which the runner reads only a part.
 */
import * as z from 'zod';
import { RemoteRepoCredsSchema } from './repo-data.js';
import { RunnerJobSpecSchema } from './runner-job-spec.js';

export const RunnerRunSchema = z.looseObject({
  id: z.string(),
  run_name: z.string(),
  project_name: z.string(),
  user: z.string(),
  /** dstack's `RunSpec`; the runner reads `repo_id` and `ssh_key_pub` from it. */
  run_spec: z
    .looseObject({
      repo_id: z.string().nullish(),
      /** The user's public key line(s) (`ssh-rsa AAAA… comment`), authorized for SSH into the job. */
      ssh_key_pub: z.string().nullish(),
    })
    .nullish(),
});
export type RunnerRun = z.output<typeof RunnerRunSchema>;

export const RunnerJobSubmissionSchema = z.looseObject({
  id: z.string(),
  submission_num: z.number().int().nonnegative().default(0),
});
export type RunnerJobSubmission = z.output<typeof RunnerJobSubmissionSchema>;

/**
 * The nodes of the job's cluster (dstack's `ClusterInfo`): every node's internal IP in rank
 * order (the master, rank 0, first), the GPUs of this job's node, and each node's GPUs in rank
 * order (`gpus_per_node`; absent from older servers, which sized every node like this one).
 */
export const RunnerClusterInfoSchema = z.looseObject({
  job_ips: z.array(z.string()),
  master_job_ip: z.string(),
  gpus_per_job: z.number().int().nonnegative(),
  gpus_per_node: z.array(z.number().int().nonnegative()).nullish(),
});
export type RunnerClusterInfo = z.output<typeof RunnerClusterInfoSchema>;

/** `POST /api/submit`. */
export const RunnerSubmitBodySchema = z.looseObject({
  run: RunnerRunSchema,
  job_spec: RunnerJobSpecSchema,
  job_submission: RunnerJobSubmissionSchema,
  cluster_info: RunnerClusterInfoSchema.nullish(),
  secrets: z.record(z.string(), z.string()).nullish(),
  /** How to reach a remote repo: its clone URL (and, for a private one, a key or token). */
  repo_credentials: RemoteRepoCredsSchema.nullish(),
  /** More public key lines authorized for SSH into the job, besides `run.run_spec.ssh_key_pub`. */
  ssh_authorized_keys: z.array(z.string()).nullish(),
  /**
   * The most bytes the job's code and each file archive may unpack to (the tar stream, headers
   * included): the server's `DSTACK_SERVER_CODE_UNPACKED_LIMIT`; 0: no limit. This server's field;
   * absent (another server): `DEFAULT_CODE_UNPACKED_LIMIT_BYTES`.
   */
  code_unpacked_limit: z.number().int().nonnegative().nullish(),
});
/** A submit body with defaults applied, as the runner holds it. */
export type RunnerSubmission = z.output<typeof RunnerSubmitBodySchema>;
/** A submit body as a client sends it: fields with defaults may be left out. */
export type RunnerSubmitBody = z.input<typeof RunnerSubmitBodySchema>;

export const RunnerJobStatusSchema = z.enum(['running', 'terminating', 'terminated', 'failed', 'done']);
export type RunnerJobStatus = z.output<typeof RunnerJobStatusSchema>;

/** One state change of the job; `timestamp` is in milliseconds since the epoch. */
export const RunnerJobStateSchema = z.object({
  state: RunnerJobStatusSchema,
  timestamp: z.number().int(),
  termination_reason: z.string().nullable(),
  termination_message: z.string().nullable(),
  exit_status: z.number().int().nullable(),
});
export type RunnerJobState = z.output<typeof RunnerJobStateSchema>;

export const RunnerLogSourceSchema = z.enum(['stdout', 'stderr', 'runner']);
export type RunnerLogSource = z.output<typeof RunnerLogSourceSchema>;

/**
 * One log line. `message` is base64 of the line's bytes including its trailing newline (a
 * partial last line has none), so concatenating decoded messages restores the output.
 */
export const RunnerLogEventSchema = z.object({
  message: z.string(),
  timestamp: z.number().int(),
  source: RunnerLogSourceSchema,
  /**
   * The entry's place in the job's log (output and runner lines share one sequence, from 1): the
   * server stores each position once, however many replicas pull it. Absent from runners that
   * predate it (a job started before an upgrade).
   */
  position: z.number().int().positive().optional(),
});
export type RunnerLogEvent = z.output<typeof RunnerLogEventSchema>;

/** `GET /api/pull?timestamp=N`: everything strictly newer than N, oldest first. */
export const RunnerPullResponseSchema = z.object({
  job_states: z.array(RunnerJobStateSchema),
  job_logs: z.array(RunnerLogEventSchema),
  runner_logs: z.array(RunnerLogEventSchema),
  /** Pass this as the next `timestamp`: nothing is lost or repeated. */
  last_updated: z.number().int(),
  /**
   * Seconds since the job's last SSH connection closed, or since it started running if none
   * has; 0 while one is open. Null or absent: the runner does not track connections.
   */
  no_connections_secs: z.number().int().nonnegative().nullish(),
  /** True when the answer was cut (too many log lines): pull again at once. */
  has_more: z.boolean(),
});
export type RunnerPullResponse = z.output<typeof RunnerPullResponseSchema>;

/** One GPU's figures in `GET /api/metrics` (dstack's `GPUMetrics`). */
export const RunnerGpuMetricsSchema = z.object({
  gpu_memory_usage_bytes: z.number().int().nonnegative(),
  gpu_util_percent: z.number().int().nonnegative(),
});

/**
 * `GET /api/metrics`: the job's resource figures now (dstack's `MetricsResponse`). CPU is the
 * total CPU time used so far (rates come from two samples); memory is what the job holds now.
 * `gpus` is empty on a host without GPUs, and also when they could not be read: then
 * `gpus_error` (this project's addition) says why, so the server stores no GPU figure rather
 * than a false zero.
 */
export const RunnerMetricsResponseSchema = z.object({
  timestamp_micro: z.number().int(),
  cpu_usage_micro: z.number().int().nonnegative(),
  memory_usage_bytes: z.number().int().nonnegative(),
  memory_working_set_bytes: z.number().int().nonnegative(),
  gpus: z.array(RunnerGpuMetricsSchema),
  gpus_error: z.string().nullish(),
});
export type RunnerMetricsResponse = z.output<typeof RunnerMetricsResponseSchema>;
export type RunnerGpuMetrics = z.output<typeof RunnerGpuMetricsSchema>;

/** `POST /api/run`. */
export const RunnerRunResponseSchema = z.object({ working_dir: z.string(), username: z.string() });
export type RunnerRunResponse = z.output<typeof RunnerRunResponseSchema>;

/** `GET /api/healthcheck`. */
export const RunnerHealthcheckSchema = z.object({ service: z.literal('dstack-runner'), version: z.string() });
export type RunnerHealthcheck = z.output<typeof RunnerHealthcheckSchema>;

/** The job's termination reasons the runner reports (a subset of dstack's `JobTerminationReason`). */
export const RunnerTerminationReason = {
  doneByRunner: 'done_by_runner',
  containerExitedWithError: 'container_exited_with_error',
  terminatedByUser: 'terminated_by_user',
  executorError: 'executor_error',
} as const;

/** The `Upgrade` protocol of the runner's `GET /api/ssh`: after the 101 the socket carries SSH-2. */
export const SSH_UPGRADE_PROTOCOL = 'ssh';
