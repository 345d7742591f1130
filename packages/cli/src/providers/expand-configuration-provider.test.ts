import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AnyConfiguration,
  ConfigurationError,
  formatConfigurationError,
  ProviderError,
  parseConfiguration,
} from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ProviderProject } from '../__fixtures__/provider-project.js';
import { expandConfigurationProvider } from './expand-configuration-provider.js';

let project: ProviderProject;

beforeEach(() => {
  project = new ProviderProject();
});

afterEach(() => {
  project.remove();
});

/** Writes a configuration into the project and expands its provider as `dstack apply` does. */
async function expand(path: string, text: string, runName?: string) {
  const file = project.write(path, text);
  const configuration: AnyConfiguration = parseConfiguration(text, { path: file });
  return {
    file,
    jobs: await expandConfigurationProvider({
      configuration,
      configurationPath: file,
      configurationText: text,
      ...(runName === undefined ? {} : { runName }),
    }),
  };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the expansion to fail');
}

/** The example configuration with other parameters. */
function curlConfiguration(parameters: Record<string, unknown>): string {
  const example = parse(readFileSync(project.copyExample('curl.dstack.yml'), 'utf8')) as Record<
    string,
    unknown
  >;
  return stringify({ ...example, parameters });
}

const ECHO_PACKAGE = `
import { defineProvider } from '@dstack/core';
import * as z from 'zod';

export default defineProvider({
  name: 'echo',
  schema: z.object({ words: z.array(z.string()).min(1), times: z.coerce.number().int().default(1) }),
  createJobs: ({ words, times }, { runName, configurationPath }) =>
    Array.from({ length: times }, (_, index) => ({
      name: \`echo-\${index}\`,
      commands: [\`echo \${words.join(' ')}\`],
      env: { RUN: String(runName), CONFIGURATION: configurationPath },
    })),
});
`;

describe('expandConfigurationProvider', () => {
  it('returns null for a configuration without a provider', async () => {
    const { jobs } = await expand('plain.dstack.yml', 'type: task\ncommands: [echo hi]\n');
    expect(jobs).toBeNull();
  });

  it('expands the curl example, quoting the arguments for the shell', async () => {
    project.copyExample('providers/curl.mjs');
    const url = "http://127.0.0.1:9/files/it's here?q=$(touch pwned)&x=`id`";
    const output = "out dir/it's; rm -rf ~";
    const { jobs } = await expand('curl.dstack.yml', curlConfiguration({ url, output }));
    expect(jobs).toHaveLength(1);
    const [job] = jobs ?? [];
    expect(job?.name).toBe('curl');
    expect(job?.commands).toHaveLength(1);
    // A stand-in curl prints its arguments: the shell must pass them through unchanged.
    const bin = project.write('bin/curl', '#!/bin/sh\nprintf "%s\\n" "$@"\n');
    chmodSync(bin, 0o755);
    const printed = execFileSync('/bin/sh', ['-c', job?.commands[0] ?? ''], {
      cwd: project.dir,
      env: { PATH: `${join(project.dir, 'bin')}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    expect(printed.split('\n').slice(0, -1)).toEqual(['-fsSL', url, '-o', output]);
  });

  it("fails the curl example's job when an artifact is missing", async () => {
    project.copyExample('providers/curl.mjs');
    const { jobs } = await expand(
      'curl.dstack.yml',
      curlConfiguration({
        url: 'https://example.com/a',
        output: 'a.txt',
        artifacts: ['a.txt', 'logs/b.txt'],
      }),
    );
    // A stand-in curl writes the output file, like a successful download.
    const bin = project.write(
      'bin/curl',
      '#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho data > "$2"\n',
    );
    chmodSync(bin, 0o755);
    const script = (jobs?.[0]?.commands ?? []).join(' && ');
    const run = spawnSync('/bin/sh', ['-c', script], {
      cwd: project.dir,
      env: { PATH: `${join(project.dir, 'bin')}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('artifact logs/b.txt is missing\n');
    expect(readFileSync(join(project.dir, 'a.txt'), 'utf8')).toBe('data\n');
  });

  it('resolves a package from the configuration directory and passes the context', async () => {
    project.write(
      'node_modules/@acme/echo-provider/package.json',
      JSON.stringify({
        name: '@acme/echo-provider',
        type: 'module',
        exports: { '.': { import: './index.mjs' } },
      }),
    );
    project.write('node_modules/@acme/echo-provider/index.mjs', ECHO_PACKAGE);
    const { file, jobs } = await expand(
      'configs/echo.dstack.yml',
      'type: task\nprovider: "@acme/echo-provider"\nparameters:\n  words: [hello, world]\n  times: "2"\n',
      'greeting',
    );
    expect(jobs).toEqual([
      { name: 'echo-0', commands: ['echo hello world'], env: { RUN: 'greeting', CONFIGURATION: file } },
      { name: 'echo-1', commands: ['echo hello world'], env: { RUN: 'greeting', CONFIGURATION: file } },
    ]);
  });

  it('reports a bad parameter at its line and column', async () => {
    project.copyExample('providers/curl.mjs');
    const text =
      'type: task\nprovider: ./providers/curl.mjs\nparameters:\n  url: ftp://example.com/a\n  output: a\n';
    const error = await failure(expand('curl.dstack.yml', text));
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(formatConfigurationError(error as ConfigurationError)).toBe(
      `${join(project.dir, 'curl.dstack.yml')}:4:8: parameters.url: expected an http or https URL`,
    );
  });

  it('reports a missing parameter under parameters', async () => {
    project.copyExample('providers/curl.mjs');
    const text = 'type: task\nprovider: ./providers/curl.mjs\nparameters:\n  url: https://example.com/\n';
    const error = await failure(expand('curl.dstack.yml', text));
    expect(error).toMatchObject({
      path: ['parameters', 'output'],
      message: "required field 'output' is missing",
      line: 4,
    });
  });

  it('reports a provider file or package that does not exist at the provider field', async () => {
    const missingFile = await failure(expand('a.dstack.yml', 'type: task\nprovider: ./nowhere.mjs\n'));
    expect(formatConfigurationError(missingFile as ConfigurationError)).toBe(
      `${join(project.dir, 'a.dstack.yml')}:2:11: provider: cannot find the provider module ${join(project.dir, 'nowhere.mjs')} ('./nowhere.mjs' is relative to the configuration's directory)`,
    );
    const missingPackage = await failure(expand('b.dstack.yml', 'type: task\nprovider: "@acme/absent"\n'));
    expect(missingPackage).toMatchObject({ path: ['provider'], line: 2, column: 11 });
    expect(missingPackage.message).toContain("cannot find package '@acme/absent'");
    expect(missingPackage.message).toContain('npm install @acme/absent');
  });

  it('reports a module that is not a provider, or cannot load', async () => {
    project.write('providers/plain.mjs', 'export const provider = {};\n');
    const notProvider = await failure(
      expand('a.dstack.yml', 'type: task\nprovider: ./providers/plain.mjs\n'),
    );
    expect(ProviderError.isInstance(notProvider)).toBe(true);
    expect(notProvider.message).toContain(
      '"./providers/plain.mjs" is not a dstack provider: it has no default export',
    );
    project.write('providers/broken.mjs', "import 'missing-dependency';\nexport default {};\n");
    const broken = await failure(expand('b.dstack.yml', 'type: task\nprovider: ./providers/broken.mjs\n'));
    expect(ProviderError.isInstance(broken)).toBe(true);
    expect(broken.message).toContain("cannot load the provider './providers/broken.mjs'");
    expect(broken.message).toContain('missing-dependency');
  });
});
