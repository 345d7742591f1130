/**
 * The bodies the server's HTTP API takes (`/api/...` requests), checked by the server's routes
 * (and the CLI's test server). Field names are dstack's (snake_case on the wire).
 */
import * as z from 'zod';
import {
  boundedConfiguration,
  MAX_CONFIGURATION_ENTRIES,
  MAX_CONFIGURATION_VALUES,
} from '../configuration/configuration-bounds.js';
import { type RunSchema, RunSpecSchema } from './api-runs.js';
import { SECRET_VALUE_MAX_LENGTH } from './api-secrets.js';
import { GlobalRoleSchema, ProjectRoleSchema } from './api-users.js';
import { ConfigurationObjectSchema, DateTimeSchema } from './api-wire.js';
import { projectNameSchema, secretNameSchema, usernameSchema } from './resource-names.js';

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
export const GetSecretRequestSchema = z.object({ name: z.string() });
export const CreateOrUpdateSecretRequestSchema = z.object({
  name: secretNameSchema,
  value: z.string().max(SECRET_VALUE_MAX_LENGTH, {
    error: `secret value must be at most ${SECRET_VALUE_MAX_LENGTH} characters`,
  }),
});
export const DeleteSecretsRequestSchema = z.object({ secrets_names: z.array(z.string()).min(1) });
