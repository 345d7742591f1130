/** `type: task` and `type: dev-environment`; `service` lives in its own module. */
import * as z from 'zod';
import { offableDurationSchema } from './duration.js';
import { portMappingSchema } from './ports.js';
import { defaultResourcesSpec, resourcesSpecSchema } from './resources.js';
import {
  baseRunConfigurationShape,
  checkImageSources,
  commandsSchema,
  groupNameSchema,
  portsShape,
} from './run-configuration-base.js';
import { strictObject } from './schema-helpers.js';
import { serviceConfigurationSchema } from './service-configuration.js';

const nodeGroupSchema = strictObject({
  /** Group name. Default: its index (`0`, `1`, …). */
  name: groupNameSchema.optional(),
  /** Number of nodes (>= 1). Default 1. */
  nodes: z.int().min(1).default(1),
  /** Resources of this group's nodes; not inherited from the task. Default resources. */
  resources: resourcesSpecSchema.default(defaultResourcesSpec),
  /** Commands of this group. Default `[]`. */
  commands: commandsSchema.default(() => []),
  /** Ports of this group. Default `[]`. */
  ports: z.array(portMappingSchema).default(() => []),
});
export type NodeGroup = z.infer<typeof nodeGroupSchema>;

/** A provider creates the task's jobs, so the fields that shape jobs otherwise are excluded. */
function checkProviderTask(
  task: { commands: string[]; nodes?: number | undefined; groups?: unknown },
  ctx: z.RefinementCtx,
): void {
  if (task.commands.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: "'commands' and 'provider' are mutually exclusive: the provider creates the commands",
      path: ['commands'],
    });
  }
  for (const field of ['nodes', 'groups'] as const) {
    if (task[field] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `'${field}' and 'provider' are mutually exclusive: the provider creates the jobs`,
        path: [field],
      });
    }
  }
}

/** A task configuration: a batch job, optionally multi-node, or jobs created by a provider. */
export const taskConfigurationSchema = strictObject({
  type: z.literal('task'),
  ...baseRunConfigurationShape,
  ...portsShape,
  /** Commands to run. Default `[]`; either `commands` or `image` is required. */
  commands: commandsSchema.default(() => []),
  /** Number of nodes (>= 1) of a homogeneous multi-node task. Unset means 1. */
  nodes: z.int().min(1).optional(),
  /** Node groups of a heterogeneous multi-node task; excludes `nodes`. */
  groups: z.array(nodeGroupSchema).min(1, { error: 'groups cannot be empty' }).optional(),
  /**
   * A provider module that creates the task's jobs from `parameters` instead of `commands`:
   * a file relative to the configuration (`./providers/curl.mjs`) or a package name. The CLI
   * loads it and sends its jobs as the run spec's `provider_jobs`. Default: none.
   */
  provider: z.string().min(1).optional(),
  /** Parameters of `provider`, validated only by the provider's schema. Default: none (`{}`). */
  parameters: z.record(z.string(), z.unknown()).optional(),
}).superRefine((task, ctx) => {
  checkImageSources(task, ctx);
  if (task.provider !== undefined) {
    checkProviderTask(task, ctx);
    return;
  }
  if (task.parameters !== undefined) {
    ctx.addIssue({ code: 'custom', message: "'parameters' needs 'provider'", path: ['parameters'] });
  }
  if (task.groups === undefined) {
    if (task.commands.length === 0 && task.image === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: "either 'commands' or 'image' is required",
        path: ['commands'],
      });
    }
    return;
  }
  if (task.nodes !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "'nodes' and 'groups' are mutually exclusive",
      path: ['groups'],
    });
  }
  for (const field of ['commands', 'ports'] as const) {
    if (task[field].length > 0) {
      ctx.addIssue({ code: 'custom', message: `with 'groups', set '${field}' in each group`, path: [field] });
    }
  }
  if (task.entrypoint !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "'entrypoint' is not allowed with 'groups'",
      path: ['entrypoint'],
    });
  }
  const names = new Set<string>();
  task.groups.forEach((group, index) => {
    const name = group.name ?? String(index);
    if (names.has(name)) {
      ctx.addIssue({
        code: 'custom',
        message: `node group name '${name}' is used twice`,
        path: ['groups', index, 'name'],
      });
    }
    names.add(name);
    if (group.commands.length === 0 && task.image === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `node group '${name}' needs 'commands', or the task needs 'image'`,
        path: ['groups', index],
      });
    }
  });
});
export type TaskConfiguration = z.infer<typeof taskConfigurationSchema>;

export const IDES = ['vscode', 'cursor', 'windsurf', 'zed'] as const;

/** A dev-environment configuration: an interactive machine reached over SSH or an IDE. */
export const devEnvironmentConfigurationSchema = strictObject({
  type: z.literal('dev-environment'),
  ...baseRunConfigurationShape,
  ...portsShape,
  /** IDE to pre-install: vscode, cursor, windsurf or zed. Default: none (SSH only). */
  ide: z.enum(IDES).optional(),
  /** IDE version (`version@commit` for windsurf). Default: latest. */
  version: z.string().min(1).optional(),
  /** Commands run on start. Default `[]`. */
  init: commandsSchema.default(() => []),
  /** Stop after this long without SSH connections (seconds) or `off`. Default `off`. */
  inactivity_duration: offableDurationSchema,
}).superRefine((environment, ctx) => {
  checkImageSources(environment, ctx);
  if (environment.entrypoint !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "'entrypoint' is not supported for dev environments",
      path: ['entrypoint'],
    });
  }
  if (environment.version !== undefined && environment.ide === undefined) {
    ctx.addIssue({ code: 'custom', message: "'version' needs 'ide'", path: ['version'] });
  }
  if (
    environment.ide === 'windsurf' &&
    environment.version !== undefined &&
    !/^.+@[a-f0-9]+$/.test(environment.version)
  ) {
    ctx.addIssue({
      code: 'custom',
      message: "windsurf versions look like 'version@commit'",
      path: ['version'],
    });
  }
  if (
    environment.dstack &&
    environment.inactivity_duration !== undefined &&
    environment.inactivity_duration !== 'off'
  ) {
    ctx.addIssue({
      code: 'custom',
      message: "'dstack' cannot be combined with 'inactivity_duration'",
      path: ['inactivity_duration'],
    });
  }
});
export type DevEnvironmentConfiguration = z.infer<typeof devEnvironmentConfigurationSchema>;

/** A task, service or dev-environment configuration, chosen by `type`. */
export const runConfigurationSchema = z.discriminatedUnion('type', [
  taskConfigurationSchema,
  serviceConfigurationSchema,
  devEnvironmentConfigurationSchema,
]);
export type RunConfiguration = z.infer<typeof runConfigurationSchema>;
