/**
 * Runs, their jobs and plans as the server's HTTP API answers them (`runs/*`): what a job runs,
 * its submissions, the run. Shared by the server (validation, OpenAPI) and the CLI (parsing
 * answers; `dstack ps` builds these and no other API model).
 */
import * as z from 'zod';
import { FileArchiveMappingSchema, RunRepoDataSchema } from '../agent-protocol/repo-data.js';
import { RunnerJobSpecSchema } from '../agent-protocol/runner-job-spec.js';
import { mountPointSchema } from '../configuration/mount-point.js';
import { ProviderJobSpecSchema } from '../providers/provider-job-spec.js';
import { ConfigurationObjectSchema, DateTimeSchema } from './api-wire.js';
import { InstanceOfferWithAvailabilitySchema } from './instances.js';
import { RequirementsSchema } from './requirements.js';
import { repoIdSchema } from './resource-names.js';
import { JobProvisioningDataSchema, JobRuntimeDataSchema } from './runs.js';
import {
  JobStatusSchema,
  JobTerminationReasonSchema,
  RetryEventSchema,
  RunStatusSchema,
  RunTerminationReasonSchema,
} from './statuses.js';
import { JobSpecUserSchema } from './unix-user.js';

/** The retry policy of a job: which events resubmit it and for how long (seconds). */
export const RetrySpecSchema = z.object({
  on_events: z.array(RetryEventSchema),
  duration: z.number().int().nonnegative().nullish(),
});
export type RetrySpec = z.output<typeof RetrySpecSchema>;

/**
 * What one job runs: built by the server from the run configuration (dstack's `JobSpec`). The
 * fields the runner reads are the agent protocol's (`RunnerJobSpecSchema`), sent to it as they are.
 */
export const JobSpecSchema = z.object({
  ...RunnerJobSpecSchema.shape,
  /** The server always names one (the runner also takes a job without it). */
  image_name: z.string(),
  /** The configuration's `user` parsed, as dstack's job spec has it (the runner takes it as is). */
  user: JobSpecUserSchema.nullish(),
  /** Seconds between the graceful stop signal and SIGKILL (whole seconds, as dstack's). */
  stop_duration: z.number().int().nonnegative().nullish(),
  privileged: z.boolean().default(false),
  /** Seconds, or null for no limit. */
  max_duration: z.number().int().positive().nullish(),
  registry_auth: z.object({ username: z.string(), password: z.string() }).nullish(),
  requirements: RequirementsSchema,
  retry: RetrySpecSchema.nullish(),
  /**
   * dstack's `utilization_policy`: the job is terminated when a GPU of it stayed under
   * `min_gpu_utilization` percent for `time_window` seconds. Null: not watched.
   */
  utilization_policy: z
    .object({ min_gpu_utilization: z.number().int(), time_window: z.number().int().positive() })
    .nullish(),
  /** Container ports the job exposes (services and `ports:`). */
  ports: z.array(z.number().int().positive()).default([]),
  /**
   * dstack's `app_specs`: the `ports:` of a task or dev environment (not a service's port) that
   * dstack's clients forward when they attach, each to `map_to_port` (null: a free local port).
   */
  app_specs: z
    .array(
      z.object({
        port: z.number().int().positive(),
        map_to_port: z.number().int().positive().nullish(),
        app_name: z.string(),
        url_path: z.string().nullish(),
        url_query_params: z.record(z.string(), z.string()).nullish(),
      }),
    )
    .default([]),
  /**
   * The configuration's `volumes` for this job: network volume names with `${{ dstack.node_rank }}`
   * and `${{ dstack.job_num }}` replaced by the job's number, and instance (host path) mounts.
   */
  volumes: z.array(mountPointSchema).nullish(),
  /** The replica group of a service's job (dstack's `replica_group`: the group's name, `0` by default). */
  replica_group: z.string().nullish(),
});
export type JobSpec = z.output<typeof JobSpecSchema>;

/** What the user submits: the configuration plus where it came from (dstack's `RunSpec`). */
export const RunSpecSchema = z.object({
  run_name: z.string().nullish(),
  configuration_path: z.string().nullish(),
  configuration: ConfigurationObjectSchema,
  /** A `profiles.yml` profile merged under the configuration. */
  profile: z.looseObject({}).nullish(),
  ssh_key_pub: z.string().nullish(),
  working_dir: z.string().nullish(),
  /** The repo the code comes from (`repos/init` recorded it); null: none. */
  repo_id: repoIdSchema.nullish(),
  repo_data: RunRepoDataSchema.nullish(),
  /** sha256 of the code uploaded to `repos/upload_code` before the apply; null: no code. */
  repo_code_hash: z.string().nullish(),
  /** Where the repo goes in the job (`repos[0].path`). */
  repo_dir: z.string().nullish(),
  /** The `files:` of the configuration as uploaded archives and where each goes. */
  file_archives: z.array(FileArchiveMappingSchema).nullish(),
  /**
   * The jobs a task's `provider` created, one job each; set by the client that loaded the
   * provider (the CLI). Required when the configuration names a `provider`, absent otherwise.
   */
  provider_jobs: z.array(ProviderJobSpecSchema).min(1).nullish(),
});
export type RunSpec = z.output<typeof RunSpecSchema>;

export const JobSubmissionSchema = z.object({
  id: z.string(),
  submission_num: z.number().int().nonnegative(),
  submitted_at: DateTimeSchema,
  last_processed_at: DateTimeSchema,
  finished_at: DateTimeSchema.nullish(),
  status: JobStatusSchema,
  /** Short status for `dstack ps`: `exited (3)`, `no offers`, `error`, `stopped`… (`jobStatusMessage`). */
  status_message: z.string().nullish(),
  termination_reason: JobTerminationReasonSchema.nullish(),
  termination_reason_message: z.string().nullish(),
  exit_status: z.number().int().nullish(),
  /** Seconds without an SSH connection, for a dev environment with `inactivity_duration`. */
  inactivity_secs: z.number().int().nonnegative().nullish(),
  job_provisioning_data: JobProvisioningDataSchema.nullish(),
  job_runtime_data: JobRuntimeDataSchema.nullish(),
  /** The instance's dstack name, when the job has one. */
  instance_name: z.string().nullish(),
  fleet_name: z.string().nullish(),
});
export type JobSubmission = z.output<typeof JobSubmissionSchema>;

/**
 * How to reach a running job (dstack's `JobConnectionInfo`): dstack's clients attach through the
 * SSH proxy it names (`sshproxy_*`, the login name is `sshproxy_upstream_id`).
 */
export const JobConnectionInfoSchema = z.object({
  ide_name: z.string().nullish(),
  attached_ide_url: z.string().nullish(),
  proxied_ide_url: z.string().nullish(),
  attached_ssh_command: z.array(z.string()).nullish(),
  proxied_ssh_command: z.array(z.string()).nullish(),
  sshproxy_hostname: z.string().nullish(),
  sshproxy_port: z.number().int().nullish(),
  sshproxy_upstream_id: z.string().nullish(),
});
export type JobConnectionInfo = z.output<typeof JobConnectionInfoSchema>;

export const JobSchema = z.object({
  job_spec: JobSpecSchema,
  job_submissions: z.array(JobSubmissionSchema),
  /** Set while the job runs and the server has an SSH proxy. */
  job_connection_info: JobConnectionInfoSchema.nullish(),
});
export type Job = z.output<typeof JobSchema>;

/** The model a service serves, as an OpenAI-compatible endpoint (dstack's `ServiceModelSpec`). */
export const ServiceModelSpecSchema = z.object({
  name: z.string(),
  /** Base URL of the OpenAI-compatible API; a path (`/proxy/…`) is relative to the server's URL. */
  base_url: z.string(),
  type: z.string(),
});
export type ServiceModelSpec = z.output<typeof ServiceModelSpecSchema>;

/** Where a service answers (dstack's `ServiceSpec`). */
export const ServiceSpecSchema = z.object({
  /** The service's endpoint; a path (`/proxy/services/{project}/{run}/`) is relative to the server's URL. */
  url: z.string(),
  model: ServiceModelSpecSchema.nullish(),
  options: z.record(z.string(), z.unknown()).default({}),
});
export type ServiceSpec = z.output<typeof ServiceSpecSchema>;

export const RunSchema = z.object({
  id: z.string(),
  project_name: z.string(),
  user: z.string(),
  submitted_at: DateTimeSchema,
  last_processed_at: DateTimeSchema,
  status: RunStatusSchema,
  /** Short status for `dstack ps` of a run in progress: `pulling`, `retrying`, else the status. */
  status_message: z.string().nullish(),
  termination_reason: RunTerminationReasonSchema.nullish(),
  run_spec: RunSpecSchema,
  jobs: z.array(JobSchema),
  latest_job_submission: JobSubmissionSchema.nullish(),
  /** USD spent so far. */
  cost: z.number().nonnegative().default(0),
  /** Human-readable reason of a failure, for `dstack ps -v`. */
  error: z.string().nullish(),
  deleted: z.boolean().default(false),
  /** Where a service answers; null for tasks and dev environments. */
  service: ServiceSpecSchema.nullish(),
  /** When a `pending` run starts next (its `schedule`, or a retry's backoff); null otherwise. */
  next_triggered_at: DateTimeSchema.nullish(),
});
export type Run = z.output<typeof RunSchema>;

/** Why a job has no offers: which requirement excluded how many offers (shown by the CLI). */
export const OfferExclusionSchema = z.object({
  requirement: z.string(),
  excluded: z.number().int().nonnegative(),
});

export const JobPlanSchema = z.object({
  job_spec: JobSpecSchema,
  offers: z.array(InstanceOfferWithAvailabilitySchema),
  total_offers: z.number().int().nonnegative(),
  max_price: z.number().nullish(),
  /** Filled when `offers` is empty: what excluded the host's/catalog's offers. */
  exclusions: z.array(OfferExclusionSchema).default([]),
  /** Backends whose offers are missing from this plan (failed, or slower than the server's deadline). */
  warnings: z.array(z.string()).default([]),
});
export type JobPlan = z.output<typeof JobPlanSchema>;

export const RunPlanSchema = z.object({
  project_name: z.string(),
  user: z.string(),
  run_spec: RunSpecSchema,
  job_plans: z.array(JobPlanSchema),
  current_resource: RunSchema.nullish(),
  action: z.enum(['create', 'update']).default('create'),
});
export type RunPlan = z.output<typeof RunPlanSchema>;
