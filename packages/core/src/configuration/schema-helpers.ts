/**
 * Small zod building blocks shared by every configuration model: strict objects whose
 * unknown-field errors suggest a close name, and a "select one schema by shape" union whose
 * errors come from the chosen branch only (zod's own unions report every branch, which reads
 * badly to a user who wrote one of them).
 */
import * as z from 'zod';

/** Marks the suggestion part of an unknown-field message so the error mapper can reuse it. */
export const SUGGESTION_SEPARATOR = '; did you mean ';

/**
 * A strict zod object: unknown fields are errors, never silently dropped. The error carries a
 * suggestion ("did you mean 'gpu'?") when a known field is close to the unknown one.
 */
export function strictObject<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== 'unrecognized_keys') return undefined;
      const key = issue.keys[0] ?? '';
      const suggestion = closestName(key, known);
      return `unknown field '${key}'${suggestion ? `${SUGGESTION_SEPARATOR}'${suggestion}'?` : ''}`;
    },
  });
}

/**
 * Validates with the schema `choose` picks for the value (e.g. by which keys an object has),
 * so errors are those of the branch the user meant.
 */
export function selectSchema<Options extends readonly z.ZodType[]>(
  choose: (value: unknown) => Options[number],
  options: Options,
) {
  const schema = z.unknown().transform((value, ctx): z.output<Options[number]> => {
    const result = choose(value).safeParse(value, { reportInput: true });
    if (result.success) return result.data as z.output<Options[number]>;
    for (const issue of result.error.issues) {
      // Re-raised issues keep their message; zod prefixes the path of this location.
      ctx.addIssue({ ...issue, path: [...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    }
    return z.NEVER;
  });
  SELECT_SCHEMA_OPTIONS.set(schema, options);
  return schema;
}

/** The schemas each `selectSchema` chooses from, for code that walks a schema's fields. */
const SELECT_SCHEMA_OPTIONS = new WeakMap<z.ZodType, readonly z.ZodType[]>();

/** The schemas a `selectSchema` chooses from; undefined for any other schema. */
export function selectSchemaOptions(schema: z.ZodType): readonly z.ZodType[] | undefined {
  return SELECT_SCHEMA_OPTIONS.get(schema);
}

/** The closest known name within a small edit distance, for "did you mean" hints. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(1, Math.floor(name.length / 3));
  return best !== undefined && bestDistance <= allowed && best !== name ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) row.push(i === 0 ? j : 0);
    rows.push(row);
  }
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const previous = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      }
      row[j] = value;
    }
  }
  return rows[a.length]![b.length]!;
}

/** How a value reads in an error message: `'abc'`, `8`, `a list`, `a mapping`, `nothing`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value;
}

/** `['resources', 'gpu']` → `resources.gpu`; `['volumes', 0]` → `volumes[0]`. */
export function formatFieldPath(path: ReadonlyArray<string | number>): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? segment : `.${segment}`;
  }
  return text;
}

/** True for plain objects (YAML mappings, JSON objects). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Scalars a YAML author may write where a string is meant (`tag: 1`) read as strings. */
export function scalarToString(value: unknown): unknown {
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
}

/** A string-to-string map; numbers and booleans written in YAML become strings. */
export const stringMapSchema = z.preprocess(
  (value) =>
    isPlainObject(value)
      ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scalarToString(item)]))
      : value,
  z.record(z.string(), z.string()),
);

/** A list of non-empty strings. */
export const stringListSchema = z.array(z.string().min(1));
