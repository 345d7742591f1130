import { describe, expect, test } from 'vitest';
import { parseDuration } from './duration.js';
import { parseMemory } from './memory.js';
import { formatRange, intRangeSchema, memoryRangeSchema } from './range.js';

describe('intRangeSchema', () => {
  test.each([
    ['2..8', { min: 2, max: 8 }],
    ['2..', { min: 2, max: null }],
    ['..4', { min: null, max: 4 }],
    ['4', { min: 4, max: 4 }],
    [4, { min: 4, max: 4 }],
    [' 1 .. 3 ', { min: 1, max: 3 }],
    [{ min: 1 }, { min: 1, max: null }],
    [
      { min: 1, max: 2 },
      { min: 1, max: 2 },
    ],
    [
      { min: null, max: 2 },
      { min: null, max: 2 },
    ],
  ])('%j → %j', (input, expected) => {
    expect(intRangeSchema.parse(input)).toEqual(expected);
  });

  test.each([
    ['8..2', "invalid range '8..2': the minimum is greater than the maximum"],
    ['..', "invalid range '..'"],
    ['1..2..3', 'expected min..max'],
    ['x..2', "'x' is not a whole number"],
    [2.5, 'expected int'],
    [true, 'expected a whole number or a range of them'],
  ])('%j is rejected', (input, message) => {
    const result = intRangeSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message.toLowerCase()).toContain(message.toLowerCase());
  });
});

describe('memoryRangeSchema', () => {
  test.each([
    ['16GB..', { min: 16, max: null }],
    ['16GB..80GB', { min: 16, max: 80 }],
    ['..512MB', { min: null, max: 0.5 }],
    ['1TB', { min: 1024, max: 1024 }],
    [24, { min: 24, max: 24 }],
    [{ min: '8GB' }, { min: 8, max: null }],
  ])('%j → %j', (input, expected) => {
    expect(memoryRangeSchema.parse(input)).toEqual(expected);
  });

  test('rejects a bad unit and reversed ranges', () => {
    expect(memoryRangeSchema.safeParse('80XB').error?.issues[0]?.message).toContain(
      "invalid memory size '80XB'",
    );
    expect(memoryRangeSchema.safeParse('80GB..16GB').error?.issues[0]?.message).toBe(
      "invalid range '80GB..16GB': the minimum is greater than the maximum",
    );
  });

  test('formatRange writes ranges as users do', () => {
    expect(formatRange({ min: 2, max: null })).toBe('2..');
    expect(formatRange({ min: 4, max: 4 })).toBe('4');
    expect(formatRange({ min: null, max: 8 }, (v) => `${v}GB`)).toBe('..8GB');
  });
});

describe('parseMemory', () => {
  test.each([
    ['80GB', 80],
    ['80gb', 80],
    ['512MB', 0.5],
    ['1.5TB', 1536],
    ['24', 24],
    [' 16 GB ', 16],
    [8, 8],
  ] as const)('%j → %d GB', (input, gigabytes) => {
    expect(parseMemory(input)).toBe(gigabytes);
  });

  test.each(['', 'GB', '80XB', '-1GB', 'lots'])('%j is rejected', (input) => {
    expect(() => parseMemory(input)).toThrow(/invalid memory size/);
  });
});

describe('parseDuration', () => {
  test.each([
    ['90s', 90],
    ['30m', 1800],
    ['1h', 3600],
    ['2d', 172_800],
    ['1w', 604_800],
    ['300', 300],
    [45, 45],
    ['5 m', 300],
  ] as const)('%j → %d s', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  test.each(['1y', 'h', '1.5h', '', -5, 1.5])('%j is rejected', (input) => {
    expect(() => parseDuration(input)).toThrow(/invalid duration/);
  });
});
