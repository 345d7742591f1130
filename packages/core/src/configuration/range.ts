/**
 * Ranges as dstack writes them: `2..8`, `16GB..`, `..4`, or a scalar N meaning N..N.
 * A missing end is `null`, which is also how dstack's API serialises it.
 */
import * as z from 'zod';
import { formatMemory, parseMemory } from './memory.js';
import { describeValue, isPlainObject } from './schema-helpers.js';

/** An inclusive range; `null` means unbounded on that side. */
export interface Range {
  min: number | null;
  max: number | null;
}

interface RangeKind {
  /** Parses one end of a range written as text; throws an Error whose message says why. */
  parseValue: (token: string) => number;
  /** Formats one end for messages. */
  formatValue: (value: number) => string;
  /** What the values are, for messages: "count", "memory size". */
  what: string;
  /** Example of a valid range for messages. */
  example: string;
  valueSchema: z.ZodNumber;
}

/** Splits `a..b` into its ends (`null` when empty); a scalar gives the same value twice. */
export function parseRangeText(text: string, parseValue: (token: string) => number): Range {
  const compact = text.replaceAll(' ', '');
  if (!compact.includes('..')) {
    const value = parseValue(compact);
    return { min: value, max: value };
  }
  const parts = compact.split('..');
  if (parts.length !== 2) throw new Error(`invalid range '${text}': expected min..max, min.. or ..max`);
  const [minText = '', maxText = ''] = parts;
  if (minText === '' && maxText === '') throw new Error(`invalid range '${text}': give at least one end`);
  return {
    min: minText === '' ? null : parseValue(minText),
    max: maxText === '' ? null : parseValue(maxText),
  };
}

/** Formats a range as the user would write it: `2..8`, `16GB..`, `4`. */
export function formatRange(range: Range, formatValue: (value: number) => string = String): string {
  if (range.min !== null && range.min === range.max) return formatValue(range.min);
  return `${range.min === null ? '' : formatValue(range.min)}..${range.max === null ? '' : formatValue(range.max)}`;
}

function makeRangeSchema(kind: RangeKind) {
  const expectation = `expected a ${kind.what} or a range of them, e.g. ${kind.example}`;
  return z
    .preprocess(
      (value, ctx) => {
        if (value === undefined) return value;
        try {
          if (typeof value === 'string') return parseRangeText(value, kind.parseValue);
          if (typeof value === 'number') return { min: value, max: value };
          if (isPlainObject(value)) {
            // Already-normalised objects (API bodies) may carry text ends or omit an end.
            const normalised: Record<string, unknown> = { ...value };
            for (const end of ['min', 'max'] as const) {
              const item = value[end];
              normalised[end] =
                item === undefined ? null : typeof item === 'string' ? kind.parseValue(item) : item;
            }
            return normalised;
          }
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message, input: value });
          return z.NEVER;
        }
        ctx.addIssue({
          code: 'custom',
          message: `${expectation}, got ${describeValue(value)}`,
          input: value,
        });
        return z.NEVER;
      },
      z.strictObject({ min: kind.valueSchema.nullable(), max: kind.valueSchema.nullable() }),
    )
    .superRefine((range, ctx) => {
      if (range.min === null && range.max === null) {
        ctx.addIssue({ code: 'custom', message: `invalid range '..': ${expectation}` });
      } else if (range.min !== null && range.max !== null && range.min > range.max) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid range '${formatRange(range, kind.formatValue)}': the minimum is greater than the maximum`,
        });
      }
    });
}

/** Parses a whole non-negative number written as text; throws with a user-facing reason. */
export function parseCount(token: string): number {
  if (!/^\d+$/.test(token)) throw new Error(`'${token}' is not a whole number`);
  return Number(token);
}

/** A range of whole numbers (CPU cores, GPU count, replicas): `2..8`, `2..`, `..4`, `4`. */
export const intRangeSchema = makeRangeSchema({
  parseValue: (token) => {
    try {
      return parseCount(token);
    } catch (error) {
      throw new Error(`invalid range value: ${(error as Error).message}`);
    }
  },
  formatValue: String,
  what: 'whole number',
  example: '2, 2..8, 2.. or ..8',
  valueSchema: z.int().min(0),
});

/** A range of memory sizes in GB: `16GB..`, `16GB..80GB`, `..512MB`, `24GB`. */
export const memoryRangeSchema = makeRangeSchema({
  parseValue: (token) => parseMemory(token),
  formatValue: formatMemory,
  what: 'memory size',
  example: '80GB, 24GB.., 16GB..80GB',
  valueSchema: z.number().min(0),
});
