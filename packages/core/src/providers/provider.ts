/**
 * The provider contract: a module that turns a task's `parameters` into the jobs the server
 * runs (dstack's custom providers). A provider module's default export is a descriptor made
 * by `defineProvider`.
 */
import type { z } from 'zod';
import { ProviderError } from './provider-error.js';
import type { ProviderJobSpecInput } from './provider-job-spec.js';

export const PROVIDER_TYPE = '@dstack/Provider';
/** The provider specification versions this core can load. */
export const SUPPORTED_PROVIDER_SPECIFICATION_VERSIONS = ['v1'] as const;

/** Any zod 4 schema (classic or mini). */
export type ProviderParametersSchema = z.core.$ZodType;

/** What `createJobs` knows besides the parameters. */
export interface ProviderContext {
  /** The run name (`dstack apply -n`, else the configuration's `name`); undefined when the server will generate one. */
  readonly runName: string | undefined;
  /** Absolute path of the configuration file that names the provider. */
  readonly configurationPath: string;
}

/** `createJobs`' answer: at least one job spec, directly or as a promise. */
export type ProviderJobs = readonly ProviderJobSpecInput[] | Promise<readonly ProviderJobSpecInput[]>;

/** Version 1 of the provider contract. Build it with `defineProvider`. */
export interface ProviderV1<Schema extends ProviderParametersSchema = ProviderParametersSchema> {
  readonly $$type: typeof PROVIDER_TYPE;
  readonly specificationVersion: 'v1';
  /** The provider's name, shown in the plan and in errors (`curl`). */
  readonly name: string;
  /** Validates the configuration's `parameters`; `createJobs` gets its output. */
  readonly schema: Schema;
  /** Turns validated parameters into job specs (at least one). */
  createJobs(parameters: z.output<Schema>, context: ProviderContext): ProviderJobs;
}

/** Every version of the contract this core knows. */
export type Provider = ProviderV1;

export type ProviderDefinition<Schema extends ProviderParametersSchema> = Omit<
  ProviderV1<Schema>,
  '$$type' | 'specificationVersion'
>;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `"${value}"`;
  return typeof value;
}

/** Zod 4 schemas, classic and mini, carry their internals in `_zod`. */
function isZodSchema(value: unknown): boolean {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

/** The problems of a v1 descriptor's fields, empty when valid. */
function validateV1(provider: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof provider.name !== 'string' || provider.name.trim() === '') {
    problems.push(`name must be a non-empty string, got ${describe(provider.name)}`);
  }
  if (!isZodSchema(provider.schema)) {
    problems.push(`schema must be a zod 4 schema, got ${describe(provider.schema)}`);
  }
  if (typeof provider.createJobs !== 'function') {
    problems.push(`createJobs must be a function, got ${describe(provider.createJobs)}`);
  }
  return problems;
}

/**
 * Brands and validates a provider descriptor (contract v1). Throws `ProviderError` listing
 * every problem; the result is frozen.
 *
 * ```js
 * export default defineProvider({
 *   name: 'curl',
 *   schema: z.object({ url: z.url(), output: z.string().min(1) }),
 *   createJobs: ({ url, output }) => [{ commands: [`curl -fsSL '${url}' -o '${output}'`] }],
 * });
 * ```
 */
export function defineProvider<Schema extends ProviderParametersSchema>(
  definition: ProviderDefinition<Schema>,
): ProviderV1<Schema> {
  const provider = {
    name: definition.name,
    schema: definition.schema,
    createJobs: definition.createJobs,
    $$type: PROVIDER_TYPE,
    specificationVersion: 'v1',
  } as const;
  const problems = validateV1(provider as unknown as Record<string, unknown>);
  if (problems.length > 0) {
    const name = typeof definition.name === 'string' ? `'${definition.name}'` : '(unnamed)';
    throw new ProviderError(`invalid provider ${name}:\n  - ${problems.join('\n  - ')}`);
  }
  return Object.freeze(provider);
}

/** Whether `value` is branded as a provider descriptor (any specification version). */
export function isProvider(
  value: unknown,
): value is { $$type: typeof PROVIDER_TYPE; specificationVersion: unknown } {
  return (
    typeof value === 'object' && value !== null && (value as { $$type?: unknown }).$$type === PROVIDER_TYPE
  );
}

function describeExport(moduleValue: unknown): string {
  if (typeof moduleValue !== 'object' || moduleValue === null) return `it is ${describe(moduleValue)}`;
  if (!('default' in moduleValue)) return 'it has no default export';
  return `its default export is ${describe((moduleValue as { default: unknown }).default)} without $$type "${PROVIDER_TYPE}"`;
}

/**
 * Checks what a provider module exported and returns it as a provider this core can use.
 * Accepts the descriptor or the module namespace (its `default` export). Throws
 * `ProviderError` naming `specifier` when the export is not a descriptor, when its
 * `specificationVersion` is one this core does not know, or when its fields are invalid.
 */
export function assertProvider(value: unknown, specifier: string): Provider {
  const candidate =
    !isProvider(value) && isProvider((value as { default?: unknown } | null)?.default)
      ? (value as { default: unknown }).default
      : value;
  if (!isProvider(candidate)) {
    throw new ProviderError(
      `"${specifier}" is not a dstack provider: ${describeExport(value)}; export default defineProvider({ name, schema, createJobs }) from @dstack/core`,
      { specifier },
    );
  }
  const version = candidate.specificationVersion;
  if (!(SUPPORTED_PROVIDER_SPECIFICATION_VERSIONS as readonly unknown[]).includes(version)) {
    throw new ProviderError(
      `"${specifier}" implements provider specification ${describe(version)}, but this @dstack/core supports only ${SUPPORTED_PROVIDER_SPECIFICATION_VERSIONS.map((v) => `"${v}"`).join(', ')}; use a version of the provider built for this @dstack/core, or upgrade dstack`,
      { specifier },
    );
  }
  const problems = validateV1(candidate as unknown as Record<string, unknown>);
  if (problems.length > 0) {
    throw new ProviderError(`"${specifier}" exports an invalid provider:\n  - ${problems.join('\n  - ')}`, {
      specifier,
    });
  }
  return candidate as unknown as Provider;
}
