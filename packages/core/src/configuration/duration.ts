/**
 * Durations as dstack writes them: `90s`, `30m`, `1h`, `2d`, `1w`, or whole seconds.
 * Stored as whole seconds. Some fields also take `off` (no limit), stored as `'off'`.
 */
import * as z from 'zod';
import { describeValue } from './schema-helpers.js';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
const DURATION_PATTERN = /^(\d+)\s*([smhdw])$/;

export const DURATION_EXPECTATION =
  'expected seconds or a number with a unit s, m, h, d or w (e.g. 90s, 30m, 1h, 2d)';

/** Parses `1h`, `30m`, `90s`, `2d`, `1w`, `"300"` or a number of seconds; throws on bad input. */
export function parseDuration(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0)
      throw new Error(`invalid duration ${value}: ${DURATION_EXPECTATION}`);
    return value;
  }
  const text = value.trim().toLowerCase();
  if (/^\d+$/.test(text)) return Number(text);
  const match = DURATION_PATTERN.exec(text);
  if (!match) throw new Error(`invalid duration '${value}': ${DURATION_EXPECTATION}`);
  return Number(match[1]) * UNIT_SECONDS[match[2]!]!;
}

function toSeconds(value: unknown, ctx: z.RefinementCtx, allowOff: boolean): unknown {
  if (value === undefined) return value;
  if (allowOff && (value === 'off' || value === false)) return 'off';
  // `true` means "the default", as in dstack; the field is then left unset.
  if (allowOff && value === true) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    const expectation = allowOff ? `${DURATION_EXPECTATION}, or off` : DURATION_EXPECTATION;
    ctx.addIssue({ code: 'custom', message: `${expectation}; got ${describeValue(value)}`, input: value });
    return z.NEVER;
  }
  if (allowOff && typeof value === 'string' && value.trim().toLowerCase() === 'off') return 'off';
  try {
    return parseDuration(value);
  } catch (error) {
    const message = (error as Error).message;
    ctx.addIssue({ code: 'custom', message: allowOff ? `${message}, or off` : message, input: value });
    return z.NEVER;
  }
}

/** A duration in whole seconds. */
export const durationSchema = z.preprocess((value, ctx) => toSeconds(value, ctx, false), z.int().min(0));

/** A duration in whole seconds, or `'off'` for no limit (`false` also means off). */
export const offableDurationSchema = z.preprocess(
  (value, ctx) => toSeconds(value, ctx, true),
  z.union([z.int().min(0), z.literal('off')]).optional(),
);

/** Seconds or `'off'`. */
export type OffableDuration = number | 'off';
