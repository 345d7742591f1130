import { describe, expect, test } from 'vitest';
import * as z from 'zod';
import {
  boundedConfiguration,
  configurationBoundProblem,
  MAX_CONFIGURATION_ENTRIES,
  MAX_CONFIGURATION_VALUES,
} from './configuration-bounds.js';

function entries(count: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (let index = 0; index < count; index++) env[`K${index}`] = 'v';
  return env;
}

describe('configurationBoundProblem', () => {
  test('accepts a mapping or list of exactly the most entries', () => {
    expect(
      configurationBoundProblem({ type: 'task', env: entries(MAX_CONFIGURATION_ENTRIES) }),
    ).toBeUndefined();
    const commands = Array.from({ length: MAX_CONFIGURATION_ENTRIES }, () => 'true');
    expect(configurationBoundProblem({ type: 'task', commands })).toBeUndefined();
  });

  test('names the mapping or list that holds one entry too many, at any depth', () => {
    expect(configurationBoundProblem({ type: 'task', env: entries(MAX_CONFIGURATION_ENTRIES + 1) })).toEqual({
      path: ['env'],
      message: `${MAX_CONFIGURATION_ENTRIES + 1} entries, more than the ${MAX_CONFIGURATION_ENTRIES} allowed`,
    });
    const ports = Array.from({ length: MAX_CONFIGURATION_ENTRIES + 1 }, (_, index) => 1000 + index);
    expect(configurationBoundProblem({ type: 'task', ports })?.path).toEqual(['ports']);
    // Unknown fields count as entries too, wherever they are.
    const nested = { type: 'service', replicas: [{ resources: entries(MAX_CONFIGURATION_ENTRIES + 1) }] };
    expect(configurationBoundProblem(nested)?.path).toEqual(['replicas', 0, 'resources']);
    expect(configurationBoundProblem(entries(MAX_CONFIGURATION_ENTRIES + 1))?.path).toEqual([]);
  });

  test('refuses a configuration of more values in all than allowed, at the root', () => {
    // Many lists, each within the bound per list.
    const perList = MAX_CONFIGURATION_ENTRIES;
    const lists = Math.ceil(MAX_CONFIGURATION_VALUES / perList);
    const files = Array.from({ length: lists }, () => Array.from({ length: perList }, () => 'x'));
    expect(configurationBoundProblem({ type: 'task', files })).toEqual({
      path: [],
      message: `more than ${MAX_CONFIGURATION_VALUES} values in all (mappings, lists and scalars), the most allowed`,
    });
  });

  test('walks a deeply nested value without overflowing the stack', () => {
    let deep: unknown = 'leaf';
    for (let depth = 0; depth < 200_000; depth++) deep = [deep];
    expect(
      configurationBoundProblem(deep, { maxEntries: 1, maxValues: Number.POSITIVE_INFINITY }),
    ).toBeUndefined();
    expect(configurationBoundProblem({ type: 'task', deep })?.path).toEqual([]);
  });
});

describe('boundedConfiguration', () => {
  test('refuses before the schema sees the value, keeping the path', () => {
    let parsed = 0;
    const schema = z.object({
      configuration: boundedConfiguration(
        z.looseObject({ type: z.string() }).transform((value) => {
          parsed += 1;
          return value;
        }),
      ),
    });
    const refused = schema.safeParse({
      configuration: { type: 'task', env: entries(MAX_CONFIGURATION_ENTRIES + 1) },
    });
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        code: 'custom',
        path: ['configuration', 'env'],
        message: `${MAX_CONFIGURATION_ENTRIES + 1} entries, more than the ${MAX_CONFIGURATION_ENTRIES} allowed`,
      }),
    ]);
    expect(parsed).toBe(0);
    expect(schema.parse({ configuration: { type: 'task', env: { A: '1' } } })).toEqual({
      configuration: { type: 'task', env: { A: '1' } },
    });
    expect(parsed).toBe(1);
  });
});
