/**
 * What `dstack apply` arguments do to a run configuration, in dstack's order
 * (`cli/services/configurators/run.py`, `apply_args`): resources, profile parameters, the name,
 * env (`-e`, then bare names from the CLI's environment), `${{ env.X }}` in registry_auth and
 * probes, and `${{ run.args }}` in commands. Every value goes through core's schema for its
 * field, so a flag takes the grammar of the YAML field and an error names the flag.
 */
import {
  InterpolatorError,
  isValidGroupsIpReference,
  isValidReferenceName,
  profileParamsSchema,
  type RunConfiguration,
  resourcesSpecSchema,
  VariablesInterpolator,
} from '@dstack/core';
import { CommandError } from '../output/command-error.js';

/** The flags of `dstack apply` that change a run (commander's camel-cased names). */
export interface RunOverrideOptions {
  /** `-e KEY[=VALUE]`, repeatable: a bare KEY takes its value from the CLI's environment. */
  env?: string[];
  gpu?: string;
  cpu?: string;
  memory?: string;
  disk?: string;
  backend?: string[];
  region?: string[];
  instanceType?: string[];
  /** `--spot`, `--on-demand`, `--spot-auto` and `--spot-policy` all set this. */
  spotPolicy?: string;
  maxPrice?: string;
  maxDuration?: string;
  fleet?: string[];
  reuse?: boolean;
  dontDestroy?: boolean;
  idleDuration?: string;
  /** `--retry` (true) or `--no-retry` (false). */
  retry?: boolean;
  retryDuration?: string;
  /** The run name (`-n`). */
  name?: string;
}

interface SchemaIssue {
  message: string;
}

type FieldSchema = {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: unknown };
};

/** `value` through `schema`, or a CommandError naming `flag`. */
function parseFlag(schema: FieldSchema, value: unknown, flag: string): unknown {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = (result.error as { issues?: SchemaIssue[] }).issues?.[0];
  throw new CommandError(`${flag}: ${issue?.message ?? 'invalid value'}`);
}

function profileField(field: keyof typeof profileParamsSchema.shape): FieldSchema {
  return profileParamsSchema.shape[field] as unknown as FieldSchema;
}

function numberFlag(text: string, flag: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value))
    throw new CommandError(`${flag}: expected a number, got '${text}'`);
  return value;
}

/** dstack's `KEY[=VALUE]` (`core/models/envs.py`, `EnvVarTuple.parse`). */
const ENV_ARGUMENT = /^([a-zA-Z_][a-zA-Z0-9_]*)(=.*$|$)/s;

function applyResources(configuration: RunConfiguration, options: RunOverrideOptions): void {
  const resourceShape = resourcesSpecSchema.shape;
  const resources = configuration.resources as Record<string, unknown>;
  for (const field of ['cpu', 'gpu', 'memory', 'disk'] as const) {
    const value = options[field];
    if (value === undefined) continue;
    resources[field] = parseFlag(resourceShape[field] as unknown as FieldSchema, value, `--${field}`);
  }
}

function applyProfileParameters(configuration: RunConfiguration, options: RunOverrideOptions): void {
  const target = configuration as Record<string, unknown>;
  const set = (field: keyof typeof profileParamsSchema.shape, value: unknown, flag: string) => {
    target[field] = parseFlag(profileField(field), value, flag);
  };
  if (options.backend?.length) set('backends', options.backend, '--backend');
  if (options.region?.length) set('regions', options.region, '--region');
  if (options.instanceType?.length) set('instance_types', options.instanceType, '--instance-type');
  if (options.maxPrice !== undefined)
    set('max_price', numberFlag(options.maxPrice, '--max-price'), '--max-price');
  if (options.maxDuration !== undefined) set('max_duration', options.maxDuration, '--max-duration');
  if (options.fleet?.length) set('fleets', options.fleet, '--fleet');
  if (options.idleDuration !== undefined) set('idle_duration', options.idleDuration, '--idle-duration');
  // dstack's `--dont-destroy`: idle_duration -1 (`off`, never terminated).
  else if (options.dontDestroy) target.idle_duration = 'off';
  if (options.reuse) target.creation_policy = 'reuse';
  if (options.spotPolicy !== undefined) set('spot_policy', options.spotPolicy, '--spot-policy');
  if (options.retry !== undefined) set('retry', options.retry, options.retry ? '--retry' : '--no-retry');
  else if (options.retryDuration !== undefined) {
    set('retry', { duration: options.retryDuration }, '--retry-duration');
  }
}

/**
 * `-e` values over the file's env, then every bare name filled from `environment`; an unset one
 * is refused with dstack's message (`EnvSentinel.from_env`).
 */
function applyEnv(
  configuration: RunConfiguration,
  entries: readonly string[],
  environment: NodeJS.ProcessEnv,
): Record<string, string> {
  const env: Record<string, string | null> = { ...configuration.env };
  for (const entry of entries) {
    const match = ENV_ARGUMENT.exec(entry);
    if (!match) throw new CommandError(`--env: expected KEY[=VALUE], got '${entry}'`);
    const key = match[1]!;
    env[key] = entry.includes('=') ? entry.slice(entry.indexOf('=') + 1) : null;
  }
  const resolved: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== null) {
      resolved[key] = value;
      continue;
    }
    const fromEnvironment = environment[key];
    if (fromEnvironment === undefined) throw new CommandError(`Environment variable ${key} is not set`);
    resolved[key] = fromEnvironment;
  }
  configuration.env = resolved;
  return resolved;
}

function interpolated(interpolator: VariablesInterpolator, text: string): string {
  try {
    return interpolator.interpolateOrError(text);
  } catch (error) {
    if (InterpolatorError.isInstance(error)) throw new CommandError(error.message, { cause: error });
    throw error;
  }
}

/** dstack's `interpolate_env`: `${{ env.X }}` in registry_auth and a service's probes; secrets stay. */
function interpolateEnv(configuration: RunConfiguration, env: Record<string, string>): void {
  const interpolator = new VariablesInterpolator({ env }, ['secrets']);
  if (configuration.registry_auth) {
    configuration.registry_auth = {
      username: interpolated(interpolator, configuration.registry_auth.username),
      password: interpolated(interpolator, configuration.registry_auth.password),
    };
  }
  if (configuration.type === 'service') {
    for (const probe of configuration.probes ?? []) {
      for (const header of probe.headers) header.value = interpolated(interpolator, header.value);
      if (probe.url) probe.url = interpolated(interpolator, probe.url);
      if (probe.body) probe.body = interpolated(interpolator, probe.body);
    }
  }
}

/** POSIX shell quoting as Python's `shlex.quote`: safe words stay bare, others in single quotes. */
export function shellQuote(word: string): string {
  if (word === '') return "''";
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** `${{ run.args }}` (`shlex.join` of the arguments after `--`) in commands, as dstack's mixin. */
function interpolateCommands(configuration: RunConfiguration, runArgs: readonly string[]): void {
  if (configuration.type === 'dev-environment') return;
  const interpolator = new VariablesInterpolator(
    { run: { args: runArgs.map(shellQuote).join(' ') } },
    { secrets: isValidReferenceName, groups: isValidGroupsIpReference },
  );
  const rewrite = (commands: string[]) => {
    for (let index = 0; index < commands.length; index++) {
      commands[index] = interpolated(interpolator, commands[index]!);
    }
  };
  rewrite(configuration.commands);
  if (configuration.type === 'task') {
    for (const group of configuration.groups ?? []) rewrite(group.commands);
  } else if (Array.isArray(configuration.replicas)) {
    for (const group of configuration.replicas) if (group.commands) rewrite(group.commands);
  }
}

/**
 * Applies the arguments to `configuration` (changed in place, as dstack's configurator does).
 * Throws CommandError naming the flag or the variable.
 */
export function applyRunOverrides(
  configuration: RunConfiguration,
  options: RunOverrideOptions,
  runArgs: readonly string[],
  environment: NodeJS.ProcessEnv = process.env,
): void {
  applyResources(configuration, options);
  applyProfileParameters(configuration, options);
  if (options.name) configuration.name = options.name;
  const env = applyEnv(configuration, options.env ?? [], environment);
  interpolateEnv(configuration, env);
  interpolateCommands(configuration, runArgs);
}
