/**
 * Memory sizes as dstack writes them: a float number of gigabytes. Units MB, GB and TB are
 * accepted (1 TB = 1024 GB, 1 GB = 1024 MB, as in dstack); a bare number is gigabytes.
 */
import * as z from 'zod';

const MEMORY_PATTERN = /^(\d+(?:\.\d*)?|\.\d+)(mb|gb|tb)?$/;

export const MEMORY_EXPECTATION = 'expected a size such as 512MB, 80GB or 1.5TB';

/** Parses `80GB`, `512MB`, `1TB`, `24` (GB) or a number into gigabytes; throws on bad input. */
export function parseMemory(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0)
      throw new Error(`invalid memory size ${value}: ${MEMORY_EXPECTATION}`);
    return value;
  }
  const match = MEMORY_PATTERN.exec(value.replaceAll(' ', '').toLowerCase());
  if (!match) throw new Error(`invalid memory size '${value}': ${MEMORY_EXPECTATION}`);
  const amount = Number(match[1]);
  switch (match[2]) {
    case 'tb':
      return amount * 1024;
    case 'mb':
      return amount / 1024;
    default:
      return amount;
  }
}

/** Formats gigabytes the way a user writes them, e.g. `80GB`, `0.5GB`. */
export function formatMemory(gigabytes: number): string {
  return `${gigabytes}GB`;
}

/** One memory size (not a range) in GB; accepts `16GB`, `512MB` or a number of GB. */
export const memorySchema = z.preprocess((value, ctx) => {
  if (typeof value !== 'string' && typeof value !== 'number') return value;
  try {
    return parseMemory(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message, input: value });
    return z.NEVER;
  }
}, z.number().min(0));
