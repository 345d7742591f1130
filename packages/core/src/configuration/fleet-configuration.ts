/** `type: fleet`: cloud fleets (`nodes`, `resources`…) and SSH fleets (`ssh_config`). */
import * as z from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { configurationBackendSchema } from './backend-type.js';
import { offableDurationSchema } from './duration.js';
import { envSchema } from './env.js';
import { backendOptionsSchema, retrySchema, SPOT_POLICIES } from './profile.js';
import { parseCount, parseRangeText } from './range.js';
import { resourcesSpecSchema } from './resources.js';
import {
  describeValue,
  isPlainObject,
  strictObject,
  stringListSchema,
  stringMapSchema,
} from './schema-helpers.js';

const NODES_EXPECTATION = "expected a number (2), a range ('0..4', '1..') or {min, target, max}";

const fleetNodesObjectSchema = strictObject({
  /** Instances kept at all times. Default 0. */
  min: z.int().min(0),
  /** Instances provisioned on apply. Default `min`. */
  target: z.int().min(0),
  /** Most instances the fleet may hold; `null` means unlimited. */
  max: z.int().min(0).nullable(),
});
export type FleetNodes = z.infer<typeof fleetNodesObjectSchema>;

/** `nodes`: `N`, `"min..max"` or `{min, target, max}`, stored as `{min, target, max}`. */
export const fleetNodesSchema = z
  .preprocess((value, ctx) => {
    let spec: Record<string, unknown>;
    if (value === undefined) return value;
    if (typeof value === 'number') spec = { min: value, max: value };
    else if (typeof value === 'string') {
      try {
        spec = { ...parseRangeText(value, parseCount) };
      } catch (error) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid nodes '${value}': ${NODES_EXPECTATION}; ${(error as Error).message}`,
          input: value,
        });
        return z.NEVER;
      }
    } else if (isPlainObject(value)) spec = { ...value };
    else {
      ctx.addIssue({
        code: 'custom',
        message: `${NODES_EXPECTATION}; got ${describeValue(value)}`,
        input: value,
      });
      return z.NEVER;
    }
    spec.min ??= 0;
    spec.target ??= spec.min;
    spec.max ??= null;
    return spec;
  }, fleetNodesObjectSchema)
  .superRefine((nodes, ctx) => {
    if (nodes.target < nodes.min)
      ctx.addIssue({ code: 'custom', message: 'target must not be less than min', path: ['target'] });
    if (nodes.max !== null && nodes.max < nodes.min) {
      ctx.addIssue({
        code: 'custom',
        message: `invalid nodes '${nodes.min}..${nodes.max}': max must not be less than min`,
      });
    } else if (nodes.max !== null && nodes.max < nodes.target) {
      ctx.addIssue({ code: 'custom', message: 'max must not be less than target', path: ['max'] });
    }
  });

const blocksSchema = z.union([z.int().min(1), z.literal('auto')], {
  error: "expected a number (>= 1) or 'auto'",
});

/**
 * A key's content, as dstack's CLI sends it: it reads `identity_file` and puts the file's
 * content here, so the server (which cannot read the user's files) can log in.
 */
const sshKeySchema = strictObject({
  /** Public key, OpenSSH format. Optional: the server only logs in with the private one. */
  public: z.string().min(1).optional(),
  /** Private key, OpenSSH or PEM. */
  private: z.string().min(1),
});
export type SshKey = z.infer<typeof sshKeySchema>;

/** `proxy_jump`: a jump host the server logs in to first and reaches the fleet host through (`ssh -J`). */
const proxyJumpSchema = strictObject({
  /** Proxy host name or IP. */
  hostname: z.string().min(1),
  /** Proxy SSH port. Default 22. */
  port: z.int().min(1).max(65_535).optional(),
  /** Proxy user. */
  user: z.string().min(1),
  /** Private key for the proxy. */
  identity_file: z.string().min(1),
  /** Content of `identity_file`, filled in by the CLI (the server logs in to the proxy with it). */
  ssh_key: sshKeySchema.optional(),
});

const sshHostObjectSchema = strictObject({
  /** Host name or IP. */
  hostname: z.string().min(1),
  /** SSH port. Default: `ssh_config.port`, else 22. */
  port: z.int().min(1).max(65_535).optional(),
  /** User. Default: `ssh_config.user`. */
  user: z.string().min(1).optional(),
  /** Private key. Default: `ssh_config.identity_file`. */
  identity_file: z.string().min(1).optional(),
  /** Content of `identity_file`, filled in by the CLI. Default: `ssh_config.ssh_key`. */
  ssh_key: sshKeySchema.optional(),
  /** Proxy for this host. Default: `ssh_config.proxy_jump`. */
  proxy_jump: proxyJumpSchema.optional(),
  /** Private IP used inside the cluster. Default: from `network` or the first private network. */
  internal_ip: z.string().min(1).optional(),
  /** Blocks to split this host into, or `auto`. Default: the fleet's `blocks`. */
  blocks: blocksSchema.optional(),
});

const sshConfigSchema = strictObject({
  /** User on all hosts. */
  user: z.string().min(1).optional(),
  /** SSH port of all hosts. Default 22. */
  port: z.int().min(1).max(65_535).optional(),
  /** Private key for all hosts, e.g. `~/.ssh/id_rsa`. */
  identity_file: z.string().min(1).optional(),
  /** Content of `identity_file`, filled in by the CLI (the server logs in with it). */
  ssh_key: sshKeySchema.optional(),
  /** Proxy for all hosts. */
  proxy_jump: proxyJumpSchema.optional(),
  /** Hosts: names/IPs or per-host objects. */
  hosts: z
    .array(
      z.union([z.string().min(1), sshHostObjectSchema], { error: 'expected a host name or {hostname, ...}' }),
    )
    .min(1),
  /** Private network for cluster traffic, `<ip>/<prefix>`. */
  network: z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/, { error: "expected a network such as '10.0.0.0/24'" })
    .optional(),
});
export type SshConfig = z.infer<typeof sshConfigSchema>;

/** Idle time of fleet instances when unset: 3 days. */
export { DEFAULT_FLEET_IDLE_DURATION } from './profile.js';

/** A fleet configuration: cloud (`nodes`) or SSH (`ssh_config`). */
export const fleetConfigurationSchema = strictObject({
  type: z.literal('fleet'),
  /** Fleet name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** `any` or `cluster` (interconnected instances). Default `any`. */
  placement: z.enum(['any', 'cluster']).optional(),
  /** Blocks to split each instance into, or `auto`. Default 1. */
  blocks: blocksSchema.default(1),
  /** Environment of SSH fleet hosts. Default `{}`. */
  env: envSchema.default(() => ({})),
  /** Instances of a cloud fleet. */
  nodes: fleetNodesSchema.optional(),
  /** Existing reservation to use. */
  reservation: z.string().min(1).optional(),
  /** Resources of each instance. Default: none required. */
  resources: resourcesSpecSchema.optional(),
  /** Backends to consider. Default: all configured. */
  backends: z.array(configurationBackendSchema).optional(),
  /** Regions to consider. */
  regions: stringListSchema.optional(),
  /** Availability zones to consider. */
  availability_zones: stringListSchema.optional(),
  /** Instance types to consider. */
  instance_types: stringListSchema.optional(),
  /** `spot`, `on-demand` or `auto`. Default `on-demand`. */
  spot_policy: z.enum(SPOT_POLICIES).optional(),
  /** Provisioning retry. Default `false`. */
  retry: retrySchema.optional(),
  /** Maximum price per instance-hour (> 0). */
  max_price: z.number().positive().optional(),
  /** Terminate instances idle this long (above `nodes.min`), or `off`. Default 3d. */
  idle_duration: offableDurationSchema,
  /** Tags propagated to cloud resources. */
  tags: stringMapSchema.optional(),
  /** Backend-specific options. */
  backend_options: backendOptionsSchema.optional(),
  /** Hosts of an SSH fleet. */
  ssh_config: sshConfigSchema.optional(),
}).superRefine((fleet, ctx) => {
  if (fleet.ssh_config !== undefined && fleet.nodes !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "'nodes' and 'ssh_config' are mutually exclusive: SSH fleets have one node per host",
      path: ['nodes'],
    });
  }
});
export type FleetConfiguration = z.infer<typeof fleetConfigurationSchema>;
