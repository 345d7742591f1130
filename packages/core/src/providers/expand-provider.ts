/**
 * Runs a provider: validates the configuration's `parameters` with the provider's schema
 * (errors point at the YAML), calls `createJobs` and checks the job specs it returns.
 */
import { LineCounter, parseDocument } from 'yaml';
import * as z from 'zod';
import { issuesToConfigurationError } from '../configuration/configuration-error.js';
import { locateInDocument } from '../configuration/yaml-positions.js';
import { ConfigurationError } from '../errors.js';
import type { Provider, ProviderContext } from './provider.js';
import { ProviderError } from './provider-error.js';
import { type ProviderJobSpec, validateProviderJobs } from './provider-job-spec.js';

/** The configuration file's text, so parameter errors can say `file:line:column`. */
export interface ProviderParametersSource {
  /** The YAML text the parameters were read from. */
  text: string;
  /** The file, named in errors. */
  file?: string;
}

interface SafeParsable {
  safeParseAsync(value: unknown, params?: { reportInput?: boolean }): Promise<z.ZodSafeParseResult<unknown>>;
}

/**
 * Classic schemas parse with their own zod copy (the provider's); mini schemas have no
 * methods and parse with core's functions, which accept any zod 4 schema.
 */
function parseWithSchema(schema: Provider['schema'], value: unknown): Promise<z.ZodSafeParseResult<unknown>> {
  const parsable = schema as unknown as Partial<SafeParsable>;
  if (typeof parsable.safeParseAsync === 'function') {
    return parsable.safeParseAsync(value, { reportInput: true });
  }
  return z.safeParseAsync(schema, value, { reportInput: true });
}

function parseSource(source: ProviderParametersSource) {
  const lineCounter = new LineCounter();
  return { document: parseDocument(source.text, { lineCounter }), lineCounter };
}

/**
 * A `ConfigurationError` about the configuration's `provider` field (a module that cannot be
 * found), at the field's line and column when `source` is given.
 */
export function providerFieldError(
  message: string,
  source?: ProviderParametersSource,
  cause?: unknown,
): ConfigurationError {
  let position: { line: number; column: number } | undefined;
  if (source !== undefined) {
    const { document, lineCounter } = parseSource(source);
    position = locateInDocument(document, lineCounter, ['provider']);
  }
  return new ConfigurationError(message, {
    ...(source?.file === undefined ? {} : { file: source.file }),
    path: ['provider'],
    ...(position ? { line: position.line, column: position.column } : {}),
    cause,
  });
}

/**
 * Validates `parameters` (the configuration's, `{}` when absent) with the provider's schema
 * and returns the schema's output. Throws `ConfigurationError` with the path
 * `['parameters', ...]`, and the line and column when `source` is given.
 */
export async function parseProviderParameters(
  provider: Provider,
  parameters: unknown,
  source?: ProviderParametersSource,
): Promise<unknown> {
  const result = await parseWithSchema(provider.schema, parameters ?? {});
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({ ...issue, path: ['parameters', ...issue.path] }));
  let located: Pick<Parameters<typeof issuesToConfigurationError>[1], 'document' | 'lineCounter'> = {};
  if (source !== undefined) located = parseSource(source);
  throw issuesToConfigurationError(
    issues,
    { file: source?.file, ...located, rootLabel: `parameters of provider '${provider.name}'` },
    result.error,
  );
}

export interface ExpandProviderOptions {
  /** The configuration's `parameters`; absent means `{}`. */
  parameters: unknown;
  context: ProviderContext;
  /** The configuration's YAML, for positions in parameter errors. Default: errors without positions. */
  source?: ProviderParametersSource;
  /** How the configuration named the provider, for errors. Default: the provider's name. */
  specifier?: string;
}

/**
 * Validates the parameters, calls `createJobs` and returns the validated job specs (at least
 * one; `name` defaults to the provider's). Throws `ConfigurationError` for bad parameters and `ProviderError` when `createJobs`
 * throws or returns something that is not a list of job specs.
 */
export async function expandProvider(
  provider: Provider,
  options: ExpandProviderOptions,
): Promise<ProviderJobSpec[]> {
  const parameters = await parseProviderParameters(provider, options.parameters, options.source);
  const specifier = options.specifier ?? provider.name;
  let jobs: unknown;
  try {
    jobs = await provider.createJobs(parameters, options.context);
  } catch (error) {
    // The provider may report its own configuration problems; anything else is its bug.
    if (ConfigurationError.isInstance(error) || ProviderError.isInstance(error)) throw error;
    const message = (error as { message?: unknown } | null)?.message;
    const reason = typeof message === 'string' ? message : String(error);
    throw new ProviderError(`provider '${provider.name}' (${specifier}): createJobs failed: ${reason}`, {
      specifier,
      cause: error,
    });
  }
  // A job without a name shows as the provider's in the plan.
  return validateProviderJobs(jobs, provider.name, specifier).map((job) => ({
    ...job,
    name: job.name ?? provider.name,
  }));
}
