/**
 * Profile parameters: where and how runs and fleets are provisioned. They are fields of every
 * run configuration and of `.dstack/profiles.yml` entries. They have no defaults here because a
 * configuration's value overrides the profile's only when set; defaults are noted per field and
 * applied when the two are merged.
 */
import * as z from 'zod';
import { configurationBackendSchema } from './backend-type.js';
import { durationSchema, offableDurationSchema } from './duration.js';
import {
  describeValue,
  isPlainObject,
  selectSchema,
  strictObject,
  stringListSchema,
  stringMapSchema,
} from './schema-helpers.js';

export const SPOT_POLICIES = ['spot', 'on-demand', 'auto'] as const;
export type SpotPolicy = (typeof SPOT_POLICIES)[number];
export const CREATION_POLICIES = ['reuse', 'reuse-or-create'] as const;
export const RETRY_EVENTS = ['no-capacity', 'interruption', 'error'] as const;
export type RetryEvent = (typeof RETRY_EVENTS)[number];
export const STARTUP_ORDERS = ['any', 'master-first', 'workers-first'] as const;
export const STOP_CRITERIA = ['all-done', 'master-done'] as const;

/** Retry duration when `retry: true` or no `duration` is given: 1 hour. */
export const DEFAULT_RETRY_DURATION = 3600;
/** Minimum utilization window: 5 minutes. */
export const MIN_UTILIZATION_TIME_WINDOW = 300;
/** Idle duration of instances provisioned for runs when unset: 5 minutes. */
export const DEFAULT_RUN_IDLE_DURATION = 300;
/** Idle duration of fleet instances when unset: 3 days. */
export const DEFAULT_FLEET_IDLE_DURATION = 3 * 24 * 3600;
/** Graceful stop duration when unset: 5 minutes. */
export const DEFAULT_STOP_DURATION = 300;

const retryObjectSchema = strictObject({
  /** Events to retry on. Default: all of no-capacity, interruption, error. */
  on_events: z
    .array(z.enum(RETRY_EVENTS))
    .min(1, { error: 'on_events cannot be empty; omit it to retry on all events' })
    .default(() => [...RETRY_EVENTS]),
  /** How long to keep retrying, in seconds. Default 1h. */
  duration: durationSchema.default(DEFAULT_RETRY_DURATION),
});
export type ProfileRetry = z.infer<typeof retryObjectSchema>;

/** `true` (all events, 1h), `false`, or `{on_events, duration}`. */
export const retrySchema = z.preprocess(
  (value) => (value === true ? {} : value),
  selectSchema((value) => (typeof value === 'boolean' ? z.literal(false) : retryObjectSchema), [
    z.literal(false),
    retryObjectSchema,
  ] as const),
);

const utilizationPolicySchema = strictObject({
  /** Minimum GPU utilization, percent (0..100). */
  min_gpu_utilization: z.int().min(0).max(100),
  /** Window the utilization is measured over, in seconds; at least 5m. */
  time_window: durationSchema.refine((seconds) => seconds >= MIN_UTILIZATION_TIME_WINDOW, {
    error: 'the minimum time_window is 5m',
  }),
});

const CRON_FIELDS = 5;
const scheduleSchema = strictObject({
  /** One or more cron expressions (UTC), stored as a list. */
  cron: z.preprocess(
    (value) => (typeof value === 'string' ? [value] : value),
    z
      .array(
        z.string().refine((cron) => cron.trim().split(/\s+/).length === CRON_FIELDS, {
          error: 'expected a cron expression with 5 fields, e.g. "0 8 * * mon-fri"',
        }),
      )
      .min(1, { error: 'give at least one cron expression' }),
  ),
});

const instanceNameSelectorSchema = strictObject({ name: z.string().min(1) });
const instanceHostnameSelectorSchema = strictObject({ hostname: z.string().min(1) });
const fleetInstanceSelectorSchema = strictObject({
  /** Fleet name, or `project/fleet` for an imported fleet. */
  fleet: z.string().min(1),
  /** Instance number in the fleet. */
  instance: z.int().min(0),
});

/** An instance to run on: a name, `{name}`, `{hostname}` or `{fleet, instance}`. */
export const instanceSelectorSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { name: value } : value),
  selectSchema(
    (value) =>
      isPlainObject(value) && 'hostname' in value
        ? instanceHostnameSelectorSchema
        : isPlainObject(value) && 'fleet' in value
          ? fleetInstanceSelectorSchema
          : instanceNameSelectorSchema,
    [instanceNameSelectorSchema, instanceHostnameSelectorSchema, fleetInstanceSelectorSchema] as const,
  ),
);

/** Backend-specific options; each entry names its backend in `type` and appears once. */
export const backendOptionsSchema = z
  .array(z.looseObject({ type: configurationBackendSchema }))
  .superRefine((options, ctx) => {
    const seen = new Set<string>();
    options.forEach((option, index) => {
      if (seen.has(option.type)) {
        ctx.addIssue({
          code: 'custom',
          message: `backend '${option.type}' has options twice`,
          path: [index, 'type'],
        });
      }
      seen.add(option.type);
    });
  });

const maxPriceSchema = z.number().positive({ error: 'max_price must be greater than 0' });

/** `fleets` entries: a fleet name or `project/fleet`. */
const fleetReferenceSchema = z
  .string()
  .regex(/^[^/]+(\/[^/]+)?$/, { error: "expected a fleet name or 'project/fleet'" });

/** The fields shared by run configurations and profiles. */
export const profileParamsShape = {
  /** Backends to consider, e.g. `[aws, gcp]`. Default: all configured. */
  backends: z.array(configurationBackendSchema).optional(),
  /** Regions to consider. Default: all. */
  regions: stringListSchema.optional(),
  /** Availability zones to consider. Default: all. */
  availability_zones: stringListSchema.optional(),
  /** Cloud instance types to consider, e.g. `[p5.48xlarge]`. Default: all. */
  instance_types: stringListSchema.optional(),
  /** An existing reservation (AWS capacity reservation or block, GCP reservation). */
  reservation: z.string().min(1).optional(),
  /** `spot`, `on-demand` or `auto`. Default `on-demand`. */
  spot_policy: z.enum(SPOT_POLICIES).optional(),
  /** Retry policy. Default `false`. */
  retry: retrySchema.optional(),
  /** Maximum running time (seconds) or `off`. Default `off`. */
  max_duration: offableDurationSchema,
  /** Maximum graceful stop time (seconds) or `off`. Default 5m. */
  stop_duration: offableDurationSchema,
  /** Maximum price per hour, in dollars (> 0). Default: no limit. */
  max_price: maxPriceSchema.optional(),
  /** `reuse` (existing instances only) or `reuse-or-create`. Default `reuse-or-create`. */
  creation_policy: z.enum(CREATION_POLICIES).optional(),
  /** Time before idle instances are terminated (seconds) or `off`. Default 5m for runs, 3d for fleets. */
  idle_duration: offableDurationSchema,
  /** Stop the run when GPU utilization stays low. Default: none. */
  utilization_policy: utilizationPolicySchema.optional(),
  /** `any`, `master-first` or `workers-first`. Default `any`. */
  startup_order: z.enum(STARTUP_ORDERS).optional(),
  /** `all-done` or `master-done`. Default `all-done`. */
  stop_criteria: z.enum(STOP_CRITERIA).optional(),
  /** Start the run on a cron schedule. Default: none. */
  schedule: scheduleSchema.optional(),
  /** Fleets considered for reuse: names, or `project/fleet` for imported fleets. Default: all. */
  fleets: z.array(fleetReferenceSchema).optional(),
  /** Specific fleet instances to run on. Default: any. */
  instances: z.array(instanceSelectorSchema).min(1).optional(),
  /** Tags propagated to cloud resources. */
  tags: stringMapSchema.optional(),
  /** Backend-specific options. */
  backend_options: backendOptionsSchema.optional(),
};

/** Profile parameters on their own (what a run configuration adds to a profile). */
export const profileParamsSchema = strictObject(profileParamsShape);
export type ProfileParams = z.infer<typeof profileParamsSchema>;

/** An entry of `.dstack/profiles.yml`: profile parameters plus `name` and `default`. */
export const profileSchema = strictObject({
  /** The name passed as `--profile`. */
  name: z.string().min(1),
  /** Use this profile when none is named. Default `false`. */
  default: z.boolean().default(false),
  ...profileParamsShape,
});
export type Profile = z.infer<typeof profileSchema>;

/** `.dstack/profiles.yml`: `{profiles: [...]}`. */
export const profilesFileSchema = strictObject({
  profiles: z.array(profileSchema).superRefine((profiles, ctx) => {
    const defaults = profiles.filter((profile) => profile.default);
    if (defaults.length > 1) {
      ctx.addIssue({
        code: 'custom',
        message: `only one profile may be the default, got ${describeValue(defaults.map((p) => p.name).join(', '))}`,
      });
    }
  }),
});
export type ProfilesFile = z.infer<typeof profilesFileSchema>;
