/**
 * Environment variables: a mapping `{NAME: value}` or a list `["NAME=value", "NAME"]`.
 * Both become a mapping. A bare `NAME` (or a `null` value) means "take the value from the
 * environment of the user running dstack" and is stored as `null`, which survives JSON.
 */
import * as z from 'zod';
import { describeValue, isPlainObject } from './schema-helpers.js';

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The longest value of one variable: 128 KiB. Linux passes no longer string to a process
 * (MAX_ARG_STRLEN, 32 pages), so a longer value could never reach the job; refusing it here
 * also keeps huge bodies from being copied into every job spec.
 */
export const MAX_ENV_VALUE_LENGTH = 128 * 1024;

function normaliseEnv(value: unknown, ctx: z.RefinementCtx): unknown {
  if (Array.isArray(value)) {
    const env: Record<string, string | null> = {};
    let failed = false;
    value.forEach((entry, index) => {
      if (typeof entry !== 'string') {
        ctx.addIssue({
          code: 'custom',
          message: `expected 'NAME=value' or 'NAME', got ${describeValue(entry)}`,
          path: [index],
          input: entry,
        });
        failed = true;
        return;
      }
      const separator = entry.indexOf('=');
      const name = separator === -1 ? entry : entry.slice(0, separator);
      if (!NAME_PATTERN.test(name)) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid variable name '${name}' in '${entry}'`,
          path: [index],
          input: entry,
        });
        failed = true;
      } else if (name in env) {
        ctx.addIssue({
          code: 'custom',
          message: `variable '${name}' is set twice`,
          path: [index],
          input: entry,
        });
        failed = true;
      }
      env[name] = separator === -1 ? null : entry.slice(separator + 1);
    });
    return failed ? z.NEVER : env;
  }
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [
        name,
        typeof item === 'number' || typeof item === 'boolean' ? String(item) : item,
      ]),
    );
  }
  return value;
}

/**
 * Environment variables as a mapping; `null` values are taken from the user's environment
 * when the run is submitted. Default `{}`.
 */
export const envSchema = z.preprocess(
  normaliseEnv,
  z.record(
    z.string().regex(NAME_PATTERN, { error: 'invalid variable name: use letters, digits and _' }),
    z
      .string()
      .max(MAX_ENV_VALUE_LENGTH, { error: `a value must be at most ${MAX_ENV_VALUE_LENGTH} characters` })
      .nullable(),
    { error: "expected a mapping or a list of 'NAME=value' / 'NAME'" },
  ),
);
export type Env = z.infer<typeof envSchema>;
