import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { assertProvider, defineProvider, isProvider } from './provider.js';
import { ProviderError } from './provider-error.js';

const echo = defineProvider({
  name: 'echo',
  schema: z.object({ text: z.string() }),
  createJobs: ({ text }) => [{ commands: [`echo ${text}`] }],
});

describe('defineProvider', () => {
  it('brands and freezes the descriptor', () => {
    expect(echo).toMatchObject({ $$type: '@dstack/Provider', specificationVersion: 'v1', name: 'echo' });
    expect(Object.isFrozen(echo)).toBe(true);
    expect(isProvider(echo)).toBe(true);
    expect(isProvider({ name: 'echo' })).toBe(false);
    expect(isProvider(null)).toBe(false);
  });

  it('types createJobs parameters from the schema output', async () => {
    const provider = defineProvider({
      name: 'typed',
      schema: z.object({ count: z.coerce.number().int() }),
      // `count` is a number here: the schema's output, not its input.
      createJobs: ({ count }) => [{ commands: [`seq ${count.toFixed(0)}`] }],
    });
    const jobs = await provider.createJobs({ count: 3 }, { runName: undefined, configurationPath: '/x.yml' });
    expect(jobs).toEqual([{ commands: ['seq 3'] }]);
  });

  it('lists every problem of an invalid definition', () => {
    const call = () =>
      defineProvider({
        name: '',
        schema: { parse: () => ({}) } as never,
        createJobs: 'curl' as never,
      });
    expect(call).toThrow(ProviderError);
    expect(call).toThrow(/name must be a non-empty string, got ""/);
    expect(call).toThrow(/schema must be a zod 4 schema, got object/);
    expect(call).toThrow(/createJobs must be a function, got "curl"/);
  });
});

describe('assertProvider', () => {
  it('returns the descriptor, or the default export of a module namespace', () => {
    expect(assertProvider(echo, './echo.mjs')).toBe(echo);
    expect(assertProvider({ default: echo }, './echo.mjs')).toBe(echo);
  });

  it('says what the module exported instead, naming the specifier', () => {
    expect(() => assertProvider({ named: echo }, './named.mjs')).toThrow(
      '"./named.mjs" is not a dstack provider: it has no default export; export default defineProvider({ name, schema, createJobs }) from @dstack/core',
    );
    expect(() => assertProvider({ default: { name: 'x' } }, '@acme/provider')).toThrow(
      '"@acme/provider" is not a dstack provider: its default export is object without $$type "@dstack/Provider"',
    );
    const error = (() => {
      try {
        assertProvider({ default: () => [] }, './fn.mjs');
      } catch (caught) {
        return caught;
      }
    })();
    expect(ProviderError.isInstance(error)).toBe(true);
    expect((error as ProviderError).specifier).toBe('./fn.mjs');
  });

  it('rejects an unknown specification version and invalid fields', () => {
    expect(() => assertProvider({ ...echo, specificationVersion: 'v9' }, './new.mjs')).toThrow(
      /"\.\/new\.mjs" implements provider specification "v9", but this @dstack\/core supports only "v1"/,
    );
    expect(() => assertProvider({ ...echo, createJobs: undefined }, './broken.mjs')).toThrow(
      '"./broken.mjs" exports an invalid provider:\n  - createJobs must be a function, got nothing',
    );
  });
});
