import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import * as zm from 'zod/mini';
import { ConfigurationError } from '../errors.js';
import { expandProvider, parseProviderParameters, providerFieldError } from './expand-provider.js';
import { defineProvider } from './provider.js';
import { ProviderError } from './provider-error.js';

const context = { runName: 'fetch', configurationPath: '/work/fetch.dstack.yml' };

const curl = defineProvider({
  name: 'curl',
  schema: z.object({ url: z.url(), output: z.string().min(1), retries: z.int().default(0) }),
  createJobs: ({ url, output, retries }, { runName }) => [
    { name: runName ?? 'curl', commands: [`curl --retry ${retries} ${url} -o ${output}`] },
  ],
});

const yaml = [
  'type: task',
  'provider: ./curl.mjs',
  'parameters:',
  '  url: not a url',
  '  output: out.txt',
  '',
].join('\n');

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('parseProviderParameters', () => {
  it("returns the schema's output", async () => {
    await expect(
      parseProviderParameters(curl, { url: 'https://example.com/a', output: 'a' }),
    ).resolves.toEqual({
      url: 'https://example.com/a',
      output: 'a',
      retries: 0,
    });
  });

  it('points at the bad parameter in the YAML', async () => {
    const error = await rejection(
      parseProviderParameters(
        curl,
        { url: 'not a url', output: 'out.txt' },
        { text: yaml, file: 'fetch.yml' },
      ),
    );
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ file: 'fetch.yml', path: ['parameters', 'url'], line: 4, column: 8 });
  });

  it('names a missing parameter, and treats absent parameters as {}', async () => {
    const error = await rejection(parseProviderParameters(curl, undefined));
    expect(error).toMatchObject({ message: "required field 'url' is missing", path: ['parameters', 'url'] });
    expect((error as ConfigurationError).line).toBeUndefined();
  });

  it('parses with a zod mini schema too', async () => {
    const mini = defineProvider({
      name: 'mini',
      schema: zm.object({ count: zm.number() }),
      createJobs: ({ count }) => [{ commands: [`seq ${count}`] }],
    });
    await expect(parseProviderParameters(mini, { count: 2 })).resolves.toEqual({ count: 2 });
    await expect(rejection(parseProviderParameters(mini, { count: 'two' }))).resolves.toMatchObject({
      message: "expected a number, got 'two'",
      path: ['parameters', 'count'],
    });
  });
});

describe('providerFieldError', () => {
  it("points at the configuration's provider field", () => {
    const error = providerFieldError('cannot find ./curl.mjs', { text: yaml, file: 'fetch.yml' });
    expect(error).toMatchObject({
      message: 'cannot find ./curl.mjs',
      file: 'fetch.yml',
      path: ['provider'],
      line: 2,
      column: 11,
    });
    expect(providerFieldError('x').line).toBeUndefined();
  });
});

describe('expandProvider', () => {
  it('names unnamed jobs after the provider', async () => {
    const unnamed = defineProvider({
      name: 'unnamed',
      schema: z.object({}),
      createJobs: () => [{ commands: ['a'] }, { name: 'second', commands: ['b'] }],
    });
    const jobs = await expandProvider(unnamed, { parameters: {}, context });
    expect(jobs.map((job) => job.name)).toEqual(['unnamed', 'second']);
  });

  it('validates the parameters, passes the context and returns the job specs', async () => {
    const jobs = await expandProvider(curl, {
      parameters: { url: 'https://example.com/a', output: 'a.txt', retries: 2 },
      context,
    });
    expect(jobs).toEqual([{ name: 'fetch', commands: ['curl --retry 2 https://example.com/a -o a.txt'] }]);
  });

  it('awaits asynchronous createJobs and validates what it returns', async () => {
    const broken = defineProvider({
      name: 'broken',
      schema: z.object({}),
      createJobs: async () => [{ commands: ['ok'] }, { image: 'x' } as never],
    });
    const error = await rejection(
      expandProvider(broken, { parameters: {}, context, specifier: './broken.mjs' }),
    );
    expect(ProviderError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      "provider 'broken': createJobs returned an invalid job spec: jobs[1].commands: required field 'commands' is missing",
    );
  });

  it('wraps an exception of createJobs, naming the provider and specifier', async () => {
    const failing = defineProvider({
      name: 'failing',
      schema: z.object({}),
      createJobs: () => {
        throw new TypeError('cannot read the manifest');
      },
    });
    const error = await rejection(
      expandProvider(failing, { parameters: {}, context, specifier: '@acme/failing' }),
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).message).toBe(
      "provider 'failing' (@acme/failing): createJobs failed: cannot read the manifest",
    );
    expect((error as ProviderError).cause).toBeInstanceOf(TypeError);
  });

  it('does not call createJobs when the parameters are invalid', async () => {
    let called = false;
    const watched = defineProvider({
      name: 'watched',
      schema: z.object({ n: z.number() }),
      createJobs: () => {
        called = true;
        return [{ commands: ['true'] }];
      },
    });
    await rejection(expandProvider(watched, { parameters: { n: 'x' }, context }));
    expect(called).toBe(false);
  });
});
