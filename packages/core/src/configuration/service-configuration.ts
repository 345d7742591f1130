/** `type: service`: a long-running app behind dstack's proxy or a gateway, with scaling. */
import * as z from 'zod';
import { durationSchema } from './duration.js';
import { servicePortSchema } from './ports.js';
import { SPOT_POLICIES } from './profile.js';
import { intRangeSchema } from './range.js';
import { defaultResourcesSpec, resourcesSpecSchema } from './resources.js';
import {
  baseRunConfigurationShape,
  checkImageSources,
  commandsSchema,
  groupNameSchema,
  pythonVersionSchema,
} from './run-configuration-base.js';
import { isPlainObject, selectSchema, strictObject } from './schema-helpers.js';

/** Scaling delays when unset: up 5m, down 10m. */
export const DEFAULT_SCALE_UP_DELAY = 300;
export const DEFAULT_SCALE_DOWN_DELAY = 600;

const scalingSchema = strictObject({
  /** The metric to track; only `rps` (requests per second). */
  metric: z.literal('rps'),
  /** Target value of the metric per replica (> 0). */
  target: z.number().positive(),
  /** Window the metric is averaged over, in seconds. Default 60s (set by the proxy). */
  window: durationSchema.optional(),
  /** Minimum time between a scaling event and the next scale-up, seconds. Default 5m. */
  scale_up_delay: durationSchema.default(DEFAULT_SCALE_UP_DELAY),
  /** Minimum time between a scaling event and the next scale-down, seconds. Default 10m. */
  scale_down_delay: durationSchema.default(DEFAULT_SCALE_DOWN_DELAY),
});
export type ScalingSpec = z.infer<typeof scalingSchema>;

/** Replica counts: a maximum is required and a missing minimum means 0. */
const replicaRangeSchema = intRangeSchema
  .refine((range) => range.max !== null, { error: 'the maximum number of replicas is required, e.g. 0..4' })
  .transform((range) => ({ min: range.min ?? 0, max: range.max }));

const replicaGroupSchema = z.preprocess(
  // `replicas` reads naturally inside a group too; it means `count`.
  (value) => {
    if (isPlainObject(value) && 'replicas' in value && !('count' in value)) {
      const { replicas, ...rest } = value;
      return { ...rest, count: replicas };
    }
    return value;
  },
  strictObject({
    /** Group name. Default: its index (`0`, `1`, …). */
    name: groupNameSchema.optional(),
    /** Number of replicas, a number or a range (a range needs `scaling`). */
    count: replicaRangeSchema,
    /** Auto-scaling rules; required when `count` is a range. */
    scaling: scalingSchema.optional(),
    /** Resources of this group's replicas; not inherited from the service. Default resources. */
    resources: resourcesSpecSchema.default(defaultResourcesSpec),
    /** Spot policy of this group. Default: the service's. */
    spot_policy: z.enum(SPOT_POLICIES).optional(),
    /** Reservation of this group. Default: the service's. */
    reservation: z.string().min(1).optional(),
    /** Commands of this group's replicas. Default `[]`. */
    commands: commandsSchema.default(() => []),
    /** Image of this group. Default: the service's. */
    image: z.string().min(1).optional(),
    python: pythonVersionSchema.optional(),
    nvcc: z.boolean().optional(),
    docker: z.boolean().optional(),
    privileged: z.boolean().optional(),
    /** Run an in-service HTTP router (e.g. `{type: sglang}`) in this group. */
    router: z.looseObject({ type: z.string().min(1) }).optional(),
  }).superRefine((group, ctx) => {
    checkImageSources(group, ctx, ' within a replica group');
    checkScaling(group.count, group.scaling, 'count', ctx);
  }),
);
export type ReplicaGroup = z.infer<typeof replicaGroupSchema>;

function checkScaling(
  range: { min: number | null; max: number | null },
  scaling: unknown,
  field: string,
  ctx: z.RefinementCtx,
): void {
  if (range.min !== range.max && scaling === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `'${field}' is a range, so 'scaling' is required`,
      path: [field],
    });
  }
  if (range.min === range.max && scaling !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `'scaling' needs '${field}' to be a range, e.g. 0..4`,
      path: ['scaling'],
    });
  }
}

/** `replicas`: a number, a range (with `scaling`) or a list of replica groups. */
const replicasSchema = selectSchema(
  (value) => (Array.isArray(value) ? z.array(replicaGroupSchema).min(1) : replicaRangeSchema),
  [z.array(replicaGroupSchema), replicaRangeSchema] as const,
);

const openAiModelSchema = strictObject({
  type: z.literal('chat').default('chat'),
  /** Model name as served. */
  name: z.string().min(1),
  format: z.literal('openai'),
  /** Path prefix of the OpenAI-compatible API. Default `/v1`. */
  prefix: z.string().default('/v1'),
});
const tgiModelSchema = strictObject({
  type: z.literal('chat').default('chat'),
  name: z.string().min(1),
  format: z.literal('tgi'),
  chat_template: z.string().optional(),
  eos_token: z.string().optional(),
});

/** `model`: a name (an OpenAI-compatible chat model at `/v1`) or `{type, name, format, ...}`. */
const modelSchema = z.preprocess(
  (value) => {
    if (typeof value === 'string') return { type: 'chat', name: value, format: 'openai' };
    if (isPlainObject(value) && value.format === undefined) return { ...value, format: 'openai' };
    return value;
  },
  selectSchema(
    (value) => (isPlainObject(value) && value.format === 'tgi' ? tgiModelSchema : openAiModelSchema),
    [openAiModelSchema, tgiModelSchema] as const,
  ),
);

const ipAddressKeySchema = strictObject({ type: z.literal('ip_address') });
const headerKeySchema = strictObject({
  type: z.literal('header'),
  header: z
    .string()
    .regex(/^[a-zA-Z0-9-_]+$/)
    .max(500),
});

const rateLimitSchema = strictObject({
  /** URL path prefix the limit applies to; the longest match wins. Default `/`. */
  prefix: z
    .string()
    .max(4094)
    .regex(/^\/[^\s\\{}]*$/, { error: "expected a path starting with '/'" })
    .default('/'),
  /** How requests are grouped. Default by client IP. */
  key: selectSchema(
    (value) => (isPlainObject(value) && value.type === 'header' ? headerKeySchema : ipAddressKeySchema),
    [ipAddressKeySchema, headerKeySchema] as const,
  ).default(() => ({ type: 'ip_address' as const })),
  /** Allowed requests per second. */
  rps: z.number().min(1 / 60),
  /** Requests allowed above the rate. Default 0. */
  burst: z.int().min(0).default(0),
});

const probeSchema = strictObject({
  /** Probe type; only `http`. */
  type: z.literal('http'),
  /** URL path to request. Default `/`. */
  url: z.string().startsWith('/', { error: "must start with '/'" }).max(2048).default('/'),
  /** HTTP method. Default `get`. */
  method: z.enum(['get', 'post', 'put', 'delete', 'patch', 'head']).default('get'),
  /** Request headers. Default `[]`. */
  headers: z
    .array(strictObject({ name: z.string().min(1).max(256), value: z.string().min(1).max(2048) }))
    .max(16)
    .default(() => []),
  /** Request body. */
  body: z.string().min(1).max(2048).optional(),
  /** Request timeout, seconds (>= 1). Default 10. */
  timeout: durationSchema.refine((seconds) => seconds >= 1, { error: 'must be at least 1s' }).default(10),
  /** Time between probes, seconds (>= 1). Default 15. */
  interval: durationSchema.refine((seconds) => seconds >= 1, { error: 'must be at least 1s' }).default(15),
  /** Consecutive successes before the replica counts as ready. Default 1. */
  ready_after: z.int().min(1).default(1),
  /** Stop probing once ready. Default `false`. */
  until_ready: z.boolean().default(false),
}).superRefine((probe, ctx) => {
  if (probe.body !== undefined && (probe.method === 'get' || probe.method === 'head')) {
    ctx.addIssue({ code: 'custom', message: `a '${probe.method}' probe cannot have a body`, path: ['body'] });
  }
});

/** `gateway`: `true`/`false`, a gateway name, `project/name`, or `{project, name}`. Stored as boolean or text. */
const gatewaySchema = z.preprocess(
  (value) => {
    if (
      isPlainObject(value) &&
      typeof value.name === 'string' &&
      Object.keys(value).every((k) => k === 'name' || k === 'project')
    ) {
      return typeof value.project === 'string' ? `${value.project}/${value.name}` : value.name;
    }
    return value;
  },
  z.union([z.boolean(), z.string().regex(/^[^/]+(\/[^/]+)?$/)], {
    error: "expected true, false, a gateway name or 'project/name'",
  }),
);

/** A service configuration. */
export const serviceConfigurationSchema = strictObject({
  type: z.literal('service'),
  ...baseRunConfigurationShape,
  /** Commands to run. Default `[]`; either `commands` or `image` is required. */
  commands: commandsSchema.default(() => []),
  /** The port the app listens on; a number N means the public port 80 forwards to N. Required. */
  port: servicePortSchema,
  /** Gateway to publish on. Default: the project's default gateway, if any. */
  gateway: gatewaySchema.optional(),
  /** Strip `/proxy/services/<project>/<run>/` when there is no gateway. Default `true`. */
  strip_prefix: z.boolean().default(true),
  /** Model served through the OpenAI-compatible endpoint. */
  model: modelSchema.optional(),
  /** HTTPS on the gateway: `true`, `false` or `auto`. Default `true`. */
  https: z.union([z.boolean(), z.literal('auto')], { error: 'expected true, false or auto' }).optional(),
  /** Require dstack authorization. Default `true`. */
  auth: z.boolean().default(true),
  /** Auto-scaling; required when `replicas` is a range. */
  scaling: scalingSchema.optional(),
  /** Rate limits, one per path prefix. Default `[]`. */
  rate_limits: z.array(rateLimitSchema).default(() => []),
  /** Health probes. Default: none (a chat probe when `model` is set). */
  probes: z.array(probeSchema).optional(),
  /** Replica count (number or range) or replica groups. Default 1. */
  replicas: replicasSchema.optional(),
}).superRefine((service, ctx) => {
  checkImageSources(service, ctx);
  const prefixes = new Set<string>();
  service.rate_limits.forEach((limit, index) => {
    if (prefixes.has(limit.prefix)) {
      ctx.addIssue({
        code: 'custom',
        message: `prefix '${limit.prefix}' has two rate limits`,
        path: ['rate_limits', index, 'prefix'],
      });
    }
    prefixes.add(limit.prefix);
  });
  const replicas = service.replicas;
  if (!Array.isArray(replicas)) {
    if (replicas !== undefined) checkScaling(replicas, service.scaling, 'replicas', ctx);
    else if (service.scaling !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: "'scaling' needs 'replicas' to be a range, e.g. 0..4",
        path: ['scaling'],
      });
    }
    if (service.commands.length === 0 && service.image === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: "either 'commands' or 'image' is required",
        path: ['commands'],
      });
    }
    return;
  }
  if (service.scaling !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "with replica groups, set 'scaling' in each group",
      path: ['scaling'],
    });
  }
  if (service.commands.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: "with replica groups, set 'commands' in each group",
      path: ['commands'],
    });
  }
  const names = new Set<string>();
  replicas.forEach((group, index) => {
    const name = group.name ?? String(index);
    if (names.has(name)) {
      ctx.addIssue({
        code: 'custom',
        message: `replica group name '${name}' is used twice`,
        path: ['replicas', index, 'name'],
      });
    }
    names.add(name);
    if (group.commands.length === 0 && group.image === undefined && service.image === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `replica group '${name}' needs 'commands' or 'image' (in the group or the service)`,
        path: ['replicas', index],
      });
    }
    for (const field of ['image', 'python', 'nvcc', 'docker', 'spot_policy', 'reservation'] as const) {
      const serviceSet =
        field === 'nvcc' || field === 'docker' ? service[field] === true : service[field] !== undefined;
      if (serviceSet && group[field] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `'${field}' is set both on the service and in replica group '${name}'; set it in one place`,
          path: ['replicas', index, field],
        });
      }
    }
  });
  if (replicas.filter((group) => group.router !== undefined).length > 1) {
    ctx.addIssue({
      code: 'custom',
      message: "at most one replica group may set 'router'",
      path: ['replicas'],
    });
  }
});
export type ServiceConfiguration = z.infer<typeof serviceConfigurationSchema>;
