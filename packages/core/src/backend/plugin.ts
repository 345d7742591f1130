import type { CatalogProvider } from '@dstack/catalog';
import type { z } from 'zod';
import { BackendPluginError } from '../errors.js';
import { BACKEND_TYPE_PATTERN, type BackendType } from '../models/backend-type.js';
import {
  CAPABILITIES,
  CAPABILITY_METHODS,
  type Capability,
  COMPUTE_METHODS,
  type Compute,
} from './compute.js';
import type { Configurator } from './configurator.js';
import { DEFAULT_PROVISIONING_TIMEOUT_SECONDS } from './consts.js';

export const BACKEND_PLUGIN_TYPE = '@dstack/BackendPlugin';
/** The plugin specification versions this core can load. */
export const SUPPORTED_BACKEND_PLUGIN_SPECIFICATION_VERSIONS = ['v1'] as const;

/** The four config schemas of dstack's config-model pattern (see `defineBackendConfigModels`). */
export interface BackendConfigSchemas {
  /** `XBackendConfig`: user fields, no creds. */
  readonly backendConfig: z.ZodType;
  /** `XBackendConfigWithCreds`: what users send; `validateConfig` input. */
  readonly backendConfigWithCreds: z.ZodType;
  /** `XStoredConfig`: what the database keeps (creds apart, encrypted). */
  readonly storedConfig: z.ZodType;
  /** `XConfig`: stored config plus creds, given to the Compute. */
  readonly config: z.ZodType;
}

export type ComputeKind = 'vm' | 'container';

/** How long an instance may take from `runJob`/`createInstance` to a reachable agent. */
export type ProvisioningTimeout =
  | number
  /** Seconds for an instance type, or undefined for the default (10 minutes). */
  | ((instanceTypeName: string) => number | undefined);

/**
 * The descriptor a backend package exports as its default export, version 1
 * of the contract. Build it with `defineBackendPlugin`.
 */
export interface BackendPluginV1<TConfigWithCreds = unknown, TConfigWithoutCreds = unknown> {
  readonly $$type: typeof BACKEND_PLUGIN_TYPE;
  readonly specificationVersion: 'v1';
  /** The backend type (`aws`), a lowercase identifier, unique among installed plugins. */
  readonly type: BackendType;
  /** `vm`: the backend starts the shim on a host; `container`: it starts the runner in a container. */
  readonly computeKind: ComputeKind;
  /** What the Compute implements; the server selects backends by it without creating a Compute. */
  readonly capabilities: readonly Capability[];
  readonly configSchemas: BackendConfigSchemas;
  createConfigurator(): Configurator<TConfigWithCreds, TConfigWithoutCreds>;
  /**
   * The backend's `@dstack/catalog` provider: offline (`collect()`, for
   * `dstack-catalog collect` and the bundled snapshot) or online (`query()`, asked live).
   */
  readonly catalogProvider?: CatalogProvider;
  /** Seconds (or a function of the instance type); default 600. */
  readonly provisioningTimeoutSeconds?: ProvisioningTimeout;
  /**
   * Whether jobs run on the dstack server's own host (the local backend), with the
   * server's user and files in reach. The server lets only global admins configure
   * such a backend, and only in projects a global admin owns. Default false.
   */
  readonly runsOnServerHost?: boolean;
}

/** Every version of the contract this core knows. */
export type BackendPlugin = BackendPluginV1;

export type BackendPluginDefinition<TConfigWithCreds = unknown, TConfigWithoutCreds = unknown> = Omit<
  BackendPluginV1<TConfigWithCreds, TConfigWithoutCreds>,
  '$$type' | 'specificationVersion'
>;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `"${value}"`;
  return typeof value;
}

function isSchema(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { safeParse?: unknown }).safeParse === 'function' &&
    typeof (value as { parse?: unknown }).parse === 'function'
  );
}

/** The problems of a v1 descriptor's fields, empty when valid. */
function validateV1(plugin: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof plugin.type !== 'string' || !BACKEND_TYPE_PATTERN.test(plugin.type)) {
    problems.push(
      `type must be a lowercase identifier ([a-z][a-z0-9_-]*) of at most 40 characters, got ${describe(plugin.type)}`,
    );
  }
  if (plugin.computeKind !== 'vm' && plugin.computeKind !== 'container') {
    problems.push(`computeKind must be "vm" or "container", got ${describe(plugin.computeKind)}`);
  }
  if (!Array.isArray(plugin.capabilities)) {
    problems.push(`capabilities must be an array, got ${describe(plugin.capabilities)}`);
  } else {
    const unknown = plugin.capabilities.filter((c) => !(CAPABILITIES as readonly unknown[]).includes(c));
    if (unknown.length > 0) {
      problems.push(
        `capabilities has unknown values ${unknown.map(describe).join(', ')}; known: ${CAPABILITIES.join(', ')}`,
      );
    }
    if (new Set(plugin.capabilities).size !== plugin.capabilities.length) {
      problems.push('capabilities has duplicates');
    }
  }
  const schemas = plugin.configSchemas as Record<string, unknown> | undefined;
  if (typeof schemas !== 'object' || schemas === null) {
    problems.push(`configSchemas must be an object, got ${describe(schemas)}`);
  } else {
    for (const key of ['backendConfig', 'backendConfigWithCreds', 'storedConfig', 'config']) {
      if (!isSchema(schemas[key])) problems.push(`configSchemas.${key} must be a zod schema`);
    }
  }
  if (typeof plugin.createConfigurator !== 'function') {
    problems.push('createConfigurator must be a function');
  }
  const timeout = plugin.provisioningTimeoutSeconds;
  if (
    timeout !== undefined &&
    typeof timeout !== 'function' &&
    !(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0)
  ) {
    problems.push(
      `provisioningTimeoutSeconds must be a positive number or a function, got ${describe(timeout)}`,
    );
  }
  if (plugin.runsOnServerHost !== undefined && typeof plugin.runsOnServerHost !== 'boolean') {
    problems.push(`runsOnServerHost must be a boolean when set, got ${describe(plugin.runsOnServerHost)}`);
  }
  if (plugin.catalogProvider !== undefined) {
    const problem = catalogProviderProblem(plugin.catalogProvider);
    if (problem) problems.push(`catalogProvider ${problem}`);
  }
  return problems;
}

/** What is wrong with a descriptor's `catalogProvider`, or undefined when it is a `CatalogProvider`. */
function catalogProviderProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) {
    return `must be an object when set, got ${describe(value)}`;
  }
  const provider = value as { kind?: unknown; name?: unknown; collect?: unknown; query?: unknown };
  if (typeof provider.name !== 'string' || provider.name === '') {
    return `name must be a non-empty string, got ${describe(provider.name)}`;
  }
  if (provider.kind === 'offline') {
    return typeof provider.collect === 'function' ? undefined : 'is offline but has no collect() method';
  }
  if (provider.kind === 'online') {
    return typeof provider.query === 'function' ? undefined : 'is online but has no query() method';
  }
  return `kind must be "offline" or "online", got ${describe(provider.kind)}`;
}

/**
 * Brands and validates a backend plugin descriptor (contract v1). Throws
 * `BackendPluginError` listing every problem; the result is frozen.
 *
 * ```ts
 * export default defineBackendPlugin({
 *   type: 'vastai', computeKind: 'container', capabilities: [],
 *   configSchemas: vastaiConfigModels, createConfigurator: () => new VastaiConfigurator(),
 * });
 * ```
 */
export function defineBackendPlugin<TConfigWithCreds = unknown, TConfigWithoutCreds = unknown>(
  definition: BackendPluginDefinition<TConfigWithCreds, TConfigWithoutCreds>,
): BackendPluginV1<TConfigWithCreds, TConfigWithoutCreds> {
  const plugin = {
    ...definition,
    capabilities: Object.freeze([...(definition.capabilities ?? [])]),
    $$type: BACKEND_PLUGIN_TYPE,
    specificationVersion: 'v1',
  } as const;
  const problems = validateV1(plugin as unknown as Record<string, unknown>);
  if (problems.length > 0) {
    const name = typeof definition.type === 'string' ? `"${definition.type}"` : '(unnamed)';
    throw new BackendPluginError(`Invalid backend plugin ${name}:\n  - ${problems.join('\n  - ')}`);
  }
  return Object.freeze(plugin);
}

/** Whether `value` is branded as a backend plugin descriptor (any specification version). */
export function isBackendPlugin(
  value: unknown,
): value is { $$type: typeof BACKEND_PLUGIN_TYPE; specificationVersion: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { $$type?: unknown }).$$type === BACKEND_PLUGIN_TYPE
  );
}

/**
 * Checks what a backend package exported and returns it as a plugin this core
 * can use. Accepts the descriptor or the module namespace (its `default`
 * export). Throws `BackendPluginError` naming the package when the export is
 * not a descriptor, when its `specificationVersion` is one this core does not
 * know (e.g. a backend built for a newer core), or when its fields are invalid.
 */
export function assertBackendPlugin(value: unknown, packageName: string): BackendPlugin {
  const candidate =
    !isBackendPlugin(value) && isBackendPlugin((value as { default?: unknown })?.default)
      ? (value as { default: unknown }).default
      : value;
  if (!isBackendPlugin(candidate)) {
    throw new BackendPluginError(
      `Package "${packageName}" is not a dstack backend plugin: its default export must be a descriptor made by defineBackendPlugin() ($$type "${BACKEND_PLUGIN_TYPE}")`,
      { packageName },
    );
  }
  const version = candidate.specificationVersion;
  if (!(SUPPORTED_BACKEND_PLUGIN_SPECIFICATION_VERSIONS as readonly unknown[]).includes(version)) {
    throw new BackendPluginError(
      `Package "${packageName}" implements backend plugin specification ${describe(version)}, but this @dstack/core supports only ${SUPPORTED_BACKEND_PLUGIN_SPECIFICATION_VERSIONS.map((v) => `"${v}"`).join(', ')}. Install a version of "${packageName}" built for this @dstack/core, or upgrade @dstack/core.`,
      { packageName },
    );
  }
  const problems = validateV1(candidate as unknown as Record<string, unknown>);
  if (problems.length > 0) {
    throw new BackendPluginError(
      `Package "${packageName}" exports an invalid backend plugin:\n  - ${problems.join('\n  - ')}`,
      { packageName },
    );
  }
  return candidate as unknown as BackendPlugin;
}

/**
 * Checks that a Compute matches its plugin: same type, same capabilities, and
 * the methods of the contract and of every declared capability present. The
 * server calls it on each Compute it builds; the conformance suite tests it.
 */
export function assertComputeMatchesPlugin(plugin: BackendPlugin, compute: Compute): void {
  const problems: string[] = [];
  if (compute.type !== plugin.type) {
    problems.push(`compute.type is ${describe(compute.type)}, the plugin's type is "${plugin.type}"`);
  }
  const declared = new Set<string>(plugin.capabilities);
  const actual = new Set<string>(Array.isArray(compute.capabilities) ? compute.capabilities : []);
  const missing = [...declared].filter((c) => !actual.has(c));
  const extra = [...actual].filter((c) => !declared.has(c));
  if (missing.length > 0) problems.push(`compute.capabilities lacks ${missing.join(', ')}`);
  if (extra.length > 0)
    problems.push(`compute.capabilities has ${extra.join(', ')}, not declared by the plugin`);
  const methods = compute as unknown as Record<string, unknown>;
  const required = [...COMPUTE_METHODS, ...plugin.capabilities.flatMap((c) => CAPABILITY_METHODS[c])];
  const absent = required.filter((method) => typeof methods[method] !== 'function');
  if (absent.length > 0) problems.push(`compute lacks methods ${absent.map((m) => `${m}()`).join(', ')}`);
  if (problems.length > 0) {
    throw new BackendPluginError(
      `Backend "${plugin.type}": its Compute does not match its plugin:\n  - ${problems.join('\n  - ')}`,
    );
  }
}

/** The provisioning timeout in seconds for an instance type on this backend. */
export function getProvisioningTimeoutSeconds(plugin: BackendPlugin, instanceTypeName: string): number {
  const timeout = plugin.provisioningTimeoutSeconds;
  const seconds = typeof timeout === 'function' ? timeout(instanceTypeName) : timeout;
  return seconds ?? DEFAULT_PROVISIONING_TIMEOUT_SECONDS;
}
