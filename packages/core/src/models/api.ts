/**
 * The server's HTTP API models: what `/api/...` endpoints take and return.
 * Shared by the server (validation, OpenAPI) and the CLI (parsing answers).
 * Field names are dstack's (snake_case on the wire).
 */
import * as z from 'zod';
import { FileArchiveMappingSchema, RunRepoDataSchema } from '../agent-protocol/repo-data.js';
import { RunnerJobSpecSchema } from '../agent-protocol/runner-api.js';
import {
  boundedConfiguration,
  MAX_CONFIGURATION_ENTRIES,
  MAX_CONFIGURATION_VALUES,
} from '../configuration/configuration-bounds.js';
import { mountPointSchema } from '../configuration/mount-point.js';
import { ProviderJobSpecSchema } from '../providers/provider-job-spec.js';
import { BackendTypeSchema } from './backend-type.js';
import { InstanceOfferWithAvailabilitySchema } from './instances.js';
import { RequirementsSchema } from './requirements.js';
import { projectNameSchema, repoIdSchema, secretNameSchema, usernameSchema } from './resource-names.js';
import { JobProvisioningDataSchema, JobRuntimeDataSchema } from './runs.js';
import {
  FleetStatusSchema,
  InstanceStatusSchema,
  InstanceTerminationReasonSchema,
  JobStatusSchema,
  JobTerminationReasonSchema,
  RetryEventSchema,
  RunStatusSchema,
  RunTerminationReasonSchema,
} from './statuses.js';
import { JobSpecUserSchema } from './unix-user.js';

/** ISO 8601 date-time strings on the wire. */
const DateTimeSchema = z.string();

/**
 * A run configuration or profile as sent by clients; the server validates it with the
 * configuration schemas, once its size is known to be within bounds.
 */
const ConfigurationObjectSchema = boundedConfiguration(z.looseObject({ type: z.string() }));

export const ProjectRoleSchema = z.enum(['admin', 'manager', 'user']);
export type ProjectRole = z.output<typeof ProjectRoleSchema>;
export const GlobalRoleSchema = z.enum(['admin', 'user']);
export type GlobalRole = z.output<typeof GlobalRoleSchema>;

/** What a user may do beyond their roles (dstack's `UserPermissions`). */
export const UserPermissionsSchema = z.object({ can_create_projects: z.boolean() });

export const UserSchema = z.object({
  id: z.string(),
  username: z.string(),
  global_role: GlobalRoleSchema,
  created_at: DateTimeSchema,
  /** dstack's clients require it; this server keeps no e-mail addresses (always null). */
  email: z.string().nullish(),
  active: z.boolean().default(true),
  permissions: UserPermissionsSchema.default({ can_create_projects: true }),
  /** The user's own SSH key (authorized_keys line), which dstack's clients log in to jobs with. */
  ssh_public_key: z.string().nullish(),
});
export type User = z.output<typeof UserSchema>;

/**
 * A user with their token (`users/create`, `refresh_token`, `get_my_user`: the token is never
 * stored in clear) and, for `get_my_user` and `refresh_ssh_key`, their SSH private key.
 */
export const UserWithCredsSchema = UserSchema.extend({
  creds: z.object({ token: z.string() }),
  ssh_private_key: z.string().nullish(),
});
export type UserWithCreds = z.output<typeof UserWithCredsSchema>;

/** What a member may do in the project (dstack's `MemberPermissions`). */
export const MemberPermissionsSchema = z.object({
  can_manage_ssh_fleets: z.boolean(),
  can_manage_secrets: z.boolean().default(false),
});

export const MemberSchema = z.object({
  user: UserSchema,
  project_role: ProjectRoleSchema,
  permissions: MemberPermissionsSchema.default({ can_manage_ssh_fleets: false, can_manage_secrets: false }),
});
export type Member = z.output<typeof MemberSchema>;

export const ProjectSchema = z.object({
  project_id: z.string(),
  project_name: z.string(),
  owner: UserSchema,
  created_at: DateTimeSchema,
  /**
   * The configured backends. `config` is the backend's config without creds; dstack's clients
   * require it (and accept any `type` there), so it carries at least the wire type.
   */
  backends: z
    .array(z.object({ name: BackendTypeSchema, config: z.looseObject({ type: z.string() }).optional() }))
    .default([]),
  members: z.array(MemberSchema).default([]),
  is_public: z.boolean().default(false),
  templates_repo: z.string().nullish(),
});
export type Project = z.output<typeof ProjectSchema>;

export const ServerInfoSchema = z.object({ server_version: z.string().nullable() });

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

export const InstanceSchema = z.object({
  id: z.string(),
  project_name: z.string(),
  name: z.string(),
  fleet_id: z.string().nullish(),
  fleet_name: z.string().nullish(),
  instance_num: z.number().int().nonnegative(),
  status: InstanceStatusSchema,
  unreachable: z.boolean().default(false),
  termination_reason: InstanceTerminationReasonSchema.nullish(),
  created: DateTimeSchema,
  backend: BackendTypeSchema.nullish(),
  region: z.string().nullish(),
  instance_type: z.looseObject({ name: z.string() }).nullish(),
  hostname: z.string().nullish(),
  price: z.number().nullish(),
  total_blocks: z.number().int().nullish(),
  busy_blocks: z.number().int().default(0),
});
export type Instance = z.output<typeof InstanceSchema>;

export const FleetSchema = z.object({
  id: z.string(),
  name: z.string(),
  project_name: z.string(),
  /** `{configuration, profile}` as applied. */
  spec: z.looseObject({ configuration: ConfigurationObjectSchema }),
  created_at: DateTimeSchema,
  status: FleetStatusSchema,
  status_message: z.string().nullish(),
  instances: z.array(InstanceSchema),
});
export type Fleet = z.output<typeof FleetSchema>;

export const LogEventSchema = z.object({
  /** ISO 8601 with milliseconds. */
  timestamp: DateTimeSchema,
  log_source: z.enum(['stdout', 'stderr', 'runner']),
  /** Base64 of the bytes, as in dstack (logs may not be UTF-8). */
  message: z.string(),
});
export type LogEvent = z.output<typeof LogEventSchema>;

// ---- Request bodies ----

/**
 * A run spec in a request: its loose parts (`profile`, `file_archives`, `provider_jobs`) are
 * bounded per mapping or list like the configuration in it; its size in all, by the route's cap.
 */
const RequestRunSpecSchema = boundedConfiguration(RunSpecSchema, {
  maxEntries: MAX_CONFIGURATION_ENTRIES,
  maxValues: Number.POSITIVE_INFINITY,
});

export const GetRunPlanRequestSchema = z.object({
  run_spec: RequestRunSpecSchema,
  max_offers: z.number().int().positive().max(1000).nullish(),
  /** Offers as the provider lists them, not cut to the requirements. Only false is served yet. */
  full_offers: z.literal(false, { error: 'full_offers: only false is supported yet' }).default(false),
  /** Offers of what fleet instances have left unallocated. Only false is served yet. */
  unallocated_resources: z
    .literal(false, { error: 'unallocated_resources: only false is supported yet' })
    .default(false),
  /**
   * The plan only lists offers (`dstack offer`): the job spec is not meant to run, and dstack's
   * placeholder image `scratch` is taken for it.
   */
  for_offers_only: z.boolean().default(false),
});
/** dstack's `gpus/list` request: a run spec's offers, their GPUs grouped by these fields. */
export const ListGpusRequestSchema = z.object({
  run_spec: RequestRunSpecSchema,
  group_by: z.array(z.enum(['backend', 'region', 'count'])).nullish(),
  full_offers: z.literal(false, { error: 'full_offers: only false is supported yet' }).default(false),
  unallocated_resources: z
    .literal(false, { error: 'unallocated_resources: only false is supported yet' })
    .default(false),
});
/**
 * The run as the client last saw it, sent back by `runs/apply` (dstack compares it to detect a
 * concurrent change). This server does not use it, so only its top level is checked: validating a
 * run of many big job specs would keep the server busy for seconds while other requests wait.
 */
const SentBackRunSchema = z.custom<z.input<typeof RunSchema>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { error: 'expected the run as answered by runs/get_plan' },
);

export const ApplyRunRequestSchema = z.object({
  plan: z.object({ run_spec: RequestRunSpecSchema, current_resource: SentBackRunSchema.nullish() }),
  force: z.boolean().default(false),
});
export const GetRunRequestSchema = z.object({
  run_name: z.string().nullish(),
  id: z.string().nullish(),
});
export const ListRunsRequestSchema = z.object({
  project_name: z.string().nullish(),
  /** Only the runs of this repo (`repos/init`'s `repo_id`). */
  repo_id: z.string().nullish(),
  /** Only the runs this user submitted. */
  username: z.string().nullish(),
  only_active: z.boolean().default(false),
  /** false: runs without their jobs (`jobs: []`). */
  include_jobs: z.boolean().default(true),
  /** The last N submissions of each job; null: all. */
  job_submissions_limit: z.number().int().nonnegative().nullish(),
  prev_submitted_at: DateTimeSchema.nullish(),
  prev_run_id: z.string().nullish(),
  limit: z.number().int().positive().max(100).default(100),
  ascending: z.boolean().default(false),
});
export const StopRunsRequestSchema = z.object({
  runs_names: z.array(z.string()).min(1),
  abort: z.boolean().default(false),
});
export const DeleteRunsRequestSchema = z.object({ runs_names: z.array(z.string()).min(1) });
export const PollLogsRequestSchema = z.object({
  run_name: z.string(),
  job_submission_id: z.string().nullish(),
  /** Exclusive lower bound (ISO 8601). */
  start_time: DateTimeSchema.nullish(),
  end_time: DateTimeSchema.nullish(),
  descending: z.boolean().default(false),
  next_token: z.string().nullish(),
  limit: z.number().int().positive().max(1000).default(1000),
  /** dstack's `dstack logs --diagnose` (the runner's own logs). Only false is served yet. */
  diagnose: z.literal(false, { error: 'diagnose: the runner logs are not served yet' }).default(false),
});
export const PollLogsResponseSchema = z.object({
  logs: z.array(LogEventSchema),
  /**
   * Where the next page starts; null when this page was the last one for now (as dstack answers:
   * its client polls until it gets null).
   */
  next_token: z.string().nullish(),
  /**
   * This server's own addition: the cursor after the rows returned, also on the last page. A
   * follower passes it back as `next_token` to get only the lines logged since (absent from
   * servers without it: follow `next_token`, then the last timestamp).
   */
  cursor: z.string().nullish(),
});
/**
 * `logs/stream`: the fields of `logs/poll` that make sense for a stream that follows the run
 * to its end (oldest first, no page size, no upper bound).
 */
export const StreamLogsRequestSchema = z.object({
  run_name: z.string(),
  job_submission_id: z.string().nullish(),
  /** Exclusive lower bound (ISO 8601). */
  start_time: DateTimeSchema.nullish(),
  /** Resume after this cursor: the `next_token` of the last line received (from either endpoint). */
  next_token: z.string().nullish(),
});

/** One line of `logs/stream`: a log event with the cursor that resumes right after it. */
export const LogStreamEventLineSchema = LogEventSchema.extend({ next_token: z.string() });
/**
 * Sent first, then whenever nothing else was sent for the heartbeat interval (15 s), so that
 * clients and proxies can tell a quiet run from a dead connection.
 */
export const LogStreamHeartbeatLineSchema = z.object({
  heartbeat: z.literal(true),
  /** The cursor so far (null before any event). */
  next_token: z.string().nullable(),
});
/**
 * The last line. `run_finished`: the run is finished and every log line was sent.
 * `server_stopping`: the server is shutting down; reconnect with `next_token`.
 */
export const LogStreamEndLineSchema = z.object({
  end: z.enum(['run_finished', 'server_stopping']),
  /** The run's status for `run_finished`. */
  status: RunStatusSchema.nullish(),
  next_token: z.string().nullable(),
});
/** A line of the newline-delimited JSON answer of `logs/stream`. */
export const LogStreamLineSchema = z.union([
  LogStreamEventLineSchema,
  LogStreamHeartbeatLineSchema,
  LogStreamEndLineSchema,
]);
export type LogStreamLine = z.output<typeof LogStreamLineSchema>;
export type LogStreamEventLine = z.output<typeof LogStreamEventLineSchema>;
export type LogStreamEndLine = z.output<typeof LogStreamEndLineSchema>;

export const GetOffersRequestSchema = z.object({
  /** Requirements as a run configuration would state them: `{resources, spot_policy, max_price, backends, regions}`. */
  configuration: ConfigurationObjectSchema,
  max_offers: z.number().int().positive().max(1000).nullish(),
});
/** dstack's `fleets/get_plan` request: the spec as `fleets/apply` would take it. */
export const GetFleetPlanRequestSchema = z.object({
  spec: boundedConfiguration(z.looseObject({ configuration: ConfigurationObjectSchema }), {
    maxEntries: MAX_CONFIGURATION_ENTRIES,
    maxValues: 2 * MAX_CONFIGURATION_VALUES,
  }),
});

export const ApplyFleetRequestSchema = z.object({
  plan: z.object({
    // Its extra fields (profile, configuration_path, …) are kept as they are: bounded, so that
    // copying them stays cheap. The configuration in it is bounded on its own.
    spec: boundedConfiguration(z.looseObject({ configuration: ConfigurationObjectSchema }), {
      maxEntries: MAX_CONFIGURATION_ENTRIES,
      maxValues: 2 * MAX_CONFIGURATION_VALUES,
    }),
  }),
  force: z.boolean().default(false),
});
/** A fleet by `name` or by `id` (dstack's client sends both keys, one of them null). */
export const GetFleetRequestSchema = z
  .object({ name: z.string().nullish(), id: z.string().nullish() })
  .refine((body) => (body.name == null) !== (body.id == null), {
    error: 'name or id: give exactly one',
    path: ['name'],
  });
export const DeleteFleetsRequestSchema = z.object({ names: z.array(z.string()).min(1) });
export const DeleteFleetInstancesRequestSchema = z.object({
  name: z.string(),
  instance_nums: z.array(z.number().int().nonnegative()).min(1),
});
export const CreateProjectRequestSchema = z.object({ project_name: projectNameSchema });
export const DeleteProjectsRequestSchema = z.object({ projects_names: z.array(z.string()).min(1) });
export const AddMembersRequestSchema = z.object({
  members: z.array(z.object({ username: z.string(), project_role: ProjectRoleSchema })).min(1),
});
export const CreateUserRequestSchema = z.object({
  username: usernameSchema,
  global_role: GlobalRoleSchema.default('user'),
});
/**
 * dstack's `users/update`: a user's global role and whether they may sign in (`active`, true when
 * absent, as in dstack). This server keeps no e-mail addresses, so `email` must be null or absent.
 */
export const UpdateUserRequestSchema = z.object({
  username: z.string().min(1),
  global_role: GlobalRoleSchema,
  email: z.null({ error: 'email: this server keeps no e-mail addresses; send null' }).optional(),
  active: z.boolean().default(true),
});
export type UpdateUserRequest = z.output<typeof UpdateUserRequestSchema>;

/** dstack's `_SECRET_VALUE_MAX_LENGTH`. */
export const SECRET_VALUE_MAX_LENGTH = 5000;
/** A project's secret; `value` is null where the caller sees names only (`secrets/list`). */
export const SecretSchema = z.object({
  id: z.string(),
  name: z.string(),
  value: z.string().nullable(),
});
export type Secret = z.output<typeof SecretSchema>;
export const GetSecretRequestSchema = z.object({ name: z.string() });
export const CreateOrUpdateSecretRequestSchema = z.object({
  name: secretNameSchema,
  value: z.string().max(SECRET_VALUE_MAX_LENGTH, {
    error: `secret value must be at most ${SECRET_VALUE_MAX_LENGTH} characters`,
  }),
});
export const DeleteSecretsRequestSchema = z.object({ secrets_names: z.array(z.string()).min(1) });

/** The one error body of the API (dstack's 400 shape): each problem with its field path. */
export const ApiErrorSchema = z.object({
  detail: z.array(
    z.object({
      msg: z.string(),
      code: z.string(),
      /** Path of the offending field in the request body, e.g. `["run_spec","configuration","resources","gpu"]`. */
      fields: z.array(z.array(z.union([z.string(), z.number()]))).nullish(),
    }),
  ),
});
export type ApiError = z.output<typeof ApiErrorSchema>;
