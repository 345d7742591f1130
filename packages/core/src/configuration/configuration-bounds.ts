/**
 * Size bounds for configurations sent to the server, checked before any schema sees them.
 *
 * dstack itself has no such limits, but validating, storing and answering a configuration costs
 * time proportional to its size, synchronously, while every other request waits: a body of a
 * million `env` entries kept the server busy for half a minute. The bounds are far above what a
 * real configuration holds (the CLI reads at most 1 MiB of YAML):
 * - one mapping or list (`env`, `commands`, `ports`, `files`, `volumes`, unknown fields, …): at
 *   most 10,000 entries;
 * - a whole configuration: at most 100,000 values (every mapping, list, string, number, …).
 * A configuration beyond them is refused with one error naming the field.
 */
import * as z from 'zod';

/** The most entries one mapping or list of a configuration may hold. */
export const MAX_CONFIGURATION_ENTRIES = 10_000;

/** The most values (mappings, lists and scalars, at any depth) a configuration may hold. */
export const MAX_CONFIGURATION_VALUES = 100_000;

export interface ConfigurationBounds {
  maxEntries: number;
  maxValues: number;
}

const DEFAULT_BOUNDS: ConfigurationBounds = {
  maxEntries: MAX_CONFIGURATION_ENTRIES,
  maxValues: MAX_CONFIGURATION_VALUES,
};

export interface BoundProblem {
  /** The field that breaks a bound (the root for a whole configuration too large). */
  path: Array<string | number>;
  /** What is wrong, without the field (errors show it before the message). */
  message: string;
}

/** A value met by the walk: its parent and its key there, so that a path is built only for an error. */
interface Visit {
  value: unknown;
  parent: Visit | undefined;
  key: string | number | undefined;
}

function pathOf(visit: Visit): Array<string | number> {
  const path: Array<string | number> = [];
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) path.push(at.key);
  return path.reverse();
}

/**
 * The first bound `value` breaks, or undefined. One pass over the value, without recursion (a
 * deeply nested body must not overflow the stack) and without building paths on the way.
 */
export function configurationBoundProblem(
  value: unknown,
  bounds: ConfigurationBounds = DEFAULT_BOUNDS,
): BoundProblem | undefined {
  const stack: Visit[] = [{ value, parent: undefined, key: undefined }];
  let values = 0;
  while (stack.length > 0) {
    const visit = stack.pop()!;
    values += 1;
    if (values > bounds.maxValues) {
      return {
        path: [],
        message: `more than ${bounds.maxValues} values in all (mappings, lists and scalars), the most allowed`,
      };
    }
    const current = visit.value;
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      if (current.length > bounds.maxEntries) return tooMany(visit, current.length, bounds);
      for (let index = 0; index < current.length; index++) {
        stack.push({ value: current[index], parent: visit, key: index });
      }
      continue;
    }
    const keys = Object.keys(current);
    if (keys.length > bounds.maxEntries) return tooMany(visit, keys.length, bounds);
    for (const key of keys)
      stack.push({ value: (current as Record<string, unknown>)[key], parent: visit, key });
  }
  return undefined;
}

function tooMany(visit: Visit, count: number, bounds: ConfigurationBounds): BoundProblem {
  return { path: pathOf(visit), message: `${count} entries, more than the ${bounds.maxEntries} allowed` };
}

/**
 * `schema`, after a check of the bounds that runs first: a configuration too large is refused
 * before the schema copies or validates any of it. Typed with the schema's input and output (the
 * check takes and gives the same values), so that clients building a body keep its input type.
 */
export function boundedConfiguration<Schema extends z.ZodType>(
  schema: Schema,
  bounds: ConfigurationBounds = DEFAULT_BOUNDS,
): z.ZodType<z.output<Schema>, z.input<Schema>> {
  const bounded = z.preprocess((value, ctx) => {
    const problem = configurationBoundProblem(value, bounds);
    if (problem === undefined) return value;
    ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path, input: undefined });
    return z.NEVER;
  }, schema);
  return bounded as unknown as z.ZodType<z.output<Schema>, z.input<Schema>>;
}
