/**
 * Custom providers end to end: the real `dstack apply` bin loads the repository's `curl`
 * example provider, sends its job to a real server (SQLite, then Postgres) with the local backend, and
 * the job (a real shim and runner on this host) downloads a file from a loopback HTTP server.
 */
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApiError } from '@dstack/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  describeEachDatabase,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

const EXAMPLES_DIR = fileURLToPath(new URL('../../../examples/', import.meta.url));

/** A loopback server serving `content` at `path`; it records the paths asked for. */
async function startFileServer(
  path: string,
  content: Buffer,
): Promise<{ server: Server; url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(request.url ?? '');
    if (request.url !== path) {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(content);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, hits };
}

/**
 * A user's project: the curl example (provider and configuration) with `@dstack/core` and
 * `zod` installed, as `npm install @dstack/core zod` would (links to the workspace's copies).
 */
function createProject(dir: string): void {
  mkdirSync(join(dir, 'providers'), { recursive: true });
  cpSync(join(EXAMPLES_DIR, 'providers/curl.mjs'), join(dir, 'providers/curl.mjs'));
  const require = createRequire(import.meta.url);
  const core = realpathSync(dirname(require.resolve('@dstack/core/package.json')));
  const zod = realpathSync(dirname(createRequire(join(core, 'package.json')).resolve('zod/package.json')));
  mkdirSync(join(dir, 'node_modules/@dstack'), { recursive: true });
  symlinkSync(core, join(dir, 'node_modules/@dstack/core'), 'dir');
  symlinkSync(zod, join(dir, 'node_modules/zod'), 'dir');
}

/** The example configuration with its own name and parameters. */
function writeConfiguration(file: string, name: string, parameters: Record<string, unknown>): void {
  const example = parse(readFileSync(join(EXAMPLES_DIR, 'curl.dstack.yml'), 'utf8')) as Record<
    string,
    unknown
  >;
  writeFileSync(file, stringify({ ...example, name, parameters }));
}

describeEachDatabase('a custom provider on the local backend', (databaseUrl) => {
  const temp = makeTempDir('dstack-provider-e2e-');
  const projectDir = join(temp.dir, 'project');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  const content = Buffer.concat([Buffer.from('served by the test\n'), randomBytes(4096)]);
  let harness: HarnessServer;
  let files: Awaited<ReturnType<typeof startFileServer>>;

  beforeAll(async () => {
    requireBuiltDstack();
    createProject(projectDir);
    files = await startFileServer('/files/data.bin', content);
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: join(temp.dir, 'server'),
      config: localBackendConfig(temp.dir),
    });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  });

  afterAll(async () => {
    // Deleting the default fleet terminates its idle instances (their shim processes).
    await harness?.terminateFleetsAndClose();
    await new Promise((resolve) => files?.server.close(resolve));
    temp.remove();
  });

  it('runs the curl example: the job downloads the served file and the run ends done', async () => {
    const output = join(temp.dir, 'downloads', "data file's copy.bin");
    mkdirSync(dirname(output), { recursive: true });
    const configuration = join(projectDir, 'curl.dstack.yml');
    writeConfiguration(configuration, 'curl-e2e', { url: `${files.url}/files/data.bin`, output });
    const result = await runDstack(['apply', '-f', configuration, '-y'], { env: cliEnvironment });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Provider\s+\.\/providers\/curl\.mjs$/m);
    expect(result.stdout).toMatch(/Run curl-e2e done\n$/);
    const run = await harness.waitForRun('curl-e2e', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('done');
    expect(run.jobs).toHaveLength(1);
    expect(run.jobs[0]?.job_spec).toMatchObject({ job_name: 'curl-e2e-0-0', job_num: 0 });
    // dstack's command line: the provider's commands after the base image's venv, under bash.
    expect(run.jobs[0]?.job_spec.commands.slice(0, 3)).toEqual(['/bin/bash', '-i', '-c']);
    expect(run.jobs[0]?.job_spec.commands[3]).toMatch(/ && curl -fsSL '.+\/files\/data\.bin' -o '.+'$/);
    expect(run.run_spec.configuration).toMatchObject({ provider: './providers/curl.mjs' });
    expect(files.hits).toEqual(['/files/data.bin']);
    expect(readFileSync(output).equals(content)).toBe(true);
  });

  it('fails the run when the download fails, as curl -f exits non-zero', async () => {
    const configuration = join(projectDir, 'missing.dstack.yml');
    const output = join(temp.dir, 'downloads', 'never.bin');
    writeConfiguration(configuration, 'curl-missing', { url: `${files.url}/files/absent.bin`, output });
    const result = await runDstack(['apply', '-f', configuration, '-y'], { env: cliEnvironment });
    expect(result.code).toBe(1);
    const run = await harness.waitForRun('curl-missing', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('failed');
    expect(run.latest_job_submission?.exit_status).toBe(22);
    expect(existsSync(output)).toBe(false);
  });

  it('reports bad parameters before reaching the server', async () => {
    const configuration = join(projectDir, 'bad.dstack.yml');
    writeConfiguration(configuration, 'curl-bad', { url: 'file:///etc/passwd', output: 'passwd' });
    const result = await runDstack(['apply', '-f', configuration, '-y'], { env: cliEnvironment });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^.+bad\.dstack\.yml:\d+:\d+: parameters\.url: expected an http or https URL\n$/,
    );
    const runs = await harness.call('/api/project/main/runs/get', { run_name: 'curl-bad' });
    expect(runs.status).toBe(400);
  });

  it('answers 400 naming provider_jobs to a client that did not expand the provider', async () => {
    const answer = await harness.call<ApiError>('/api/project/main/runs/get_plan', {
      run_spec: {
        configuration: {
          type: 'task',
          provider: './providers/curl.mjs',
          parameters: { url: 'https://example.com/', output: 'x' },
        },
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0]?.fields).toEqual([['run_spec', 'provider_jobs']]);
    expect(answer.body.detail[0]?.msg).toContain('no provider_jobs');
  });
});
