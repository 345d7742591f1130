import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { RUNNER_BIN_PATH, RUNNER_BUNDLE_PATH } from '../paths.js';
import {
  buildIfMissing,
  type Child,
  killChild,
  spawnNode,
  waitForExit,
  waitForOutput,
} from '../testing/child-process.test.helpers.js';
import { decodeLogs, pullUntil, submitBody } from '../testing/runner-job.test.helpers.js';

/** ssh2's native parts, which it requires inside try/catch and does without (pure JavaScript). */
const SSH2_OPTIONAL_NATIVE_MODULES = ['cpu-features', './crypto/build/Release/sshcrypto.node'];

let homeDir: string;
let child: Child | undefined;

beforeAll(() => {
  buildIfMissing(RUNNER_BIN_PATH, '@dstack/runner');
  buildIfMissing(RUNNER_BUNDLE_PATH, '@dstack/runner');
}, 120_000);

beforeEach(() => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-bin-'));
});

afterEach(async () => {
  await killChild(child);
  child = undefined;
  rmSync(homeDir, { recursive: true, force: true });
});

/** Starts the command, runs one job through it, then stops it with SIGTERM. */
async function runJobThrough(script: string) {
  const portFile = join(homeDir, 'runner.port');
  const sshPortFile = join(homeDir, 'runner.ssh-port');
  const started = spawnNode(script, [
    'start',
    '--http-port',
    '0',
    '--home',
    homeDir,
    '--port-file',
    portFile,
    // A free SSH port, written where a Slurm job's backend reads it.
    '--ssh-port',
    '0',
    '--ssh-port-file',
    sshPortFile,
  ]);
  child = started.child;
  const [, printedPort] = await waitForOutput(child, /listening on (\d+)\n/);
  expect(readFileSync(portFile, 'utf8').trim()).toBe(printedPort);
  const sshPort = Number(readFileSync(sshPortFile, 'utf8'));
  expect(sshPort).toBeGreaterThan(0);
  expect(sshPort).not.toBe(Number(printedPort));
  const client = new RunnerClient(`http://127.0.0.1:${printedPort}`);
  expect(await client.healthcheck()).toMatchObject({ service: 'dstack-runner' });
  await client.submit(submitBody(['echo "from $DSTACK_RUN_NAME"']));
  await client.run();
  const job = await pullUntil(client);
  child.kill('SIGTERM');
  return { job, exitCode: await waitForExit(child), output: started.output() };
}

describe('dstack-runner command', () => {
  it('serves a job from the built bin and exits 0 on SIGTERM', async () => {
    const { job, exitCode } = await runJobThrough(RUNNER_BIN_PATH);
    expect(decodeLogs(job.jobLogs)).toBe('from test-run\n');
    expect(job.states.at(-1)?.state).toBe('done');
    expect(exitCode).toBe(0);
  });

  it('serves a job from the single-file bundle, which imports only node built-ins', async () => {
    const bundle = readFileSync(RUNNER_BUNDLE_PATH, 'utf8');
    // Static imports start a line; ssh2, which is CommonJS, loads through esbuild's `__require`.
    const loaded = [
      ...bundle.matchAll(
        /^import\s[^;]*?\sfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']|__require\("([^"]+)"\)/gm,
      ),
    ].map((match) => match[1] ?? match[2] ?? match[3] ?? '');
    expect(loaded.length).toBeGreaterThan(0);
    expect(
      loaded.filter(
        (specifier) => !isBuiltin(specifier) && !SSH2_OPTIONAL_NATIVE_MODULES.includes(specifier),
      ),
    ).toEqual([]);
    const { job, exitCode } = await runJobThrough(RUNNER_BUNDLE_PATH);
    expect(decodeLogs(job.jobLogs)).toBe('from test-run\n');
    expect(exitCode).toBe(0);
  });

  it('takes its token from DSTACK_RUNNER_TOKEN and keeps it from the job, which gets the rest of its environment', async () => {
    const started = spawnNode(RUNNER_BIN_PATH, ['start', '--http-port', '0', '--home', homeDir], {
      ...process.env,
      DSTACK_RUNNER_TOKEN: 'token-from-env',
      // As an image's ENV would be: the container's environment is the job's.
      FROM_IMAGE: 'image-variable',
    });
    child = started.child;
    const [, port] = await waitForOutput(child, /listening on (\d+)\n/);
    const url = `http://127.0.0.1:${port}`;
    await expect(new RunnerClient(url).pull(0)).rejects.toMatchObject({ statusCode: 401 });
    const client = new RunnerClient(url, { token: 'token-from-env' });
    await client.submit(submitBody(['echo "token=[$DSTACK_RUNNER_TOKEN] image=[$FROM_IMAGE]"']));
    await client.run();
    expect(decodeLogs((await pullUntil(client)).jobLogs)).toBe('token=[] image=[image-variable]\n');
    expect(started.output()).not.toContain('warning');
  });

  it('warns that its API is open when started without a token', async () => {
    const { DSTACK_RUNNER_TOKEN: _ignored, ...environment } = process.env;
    const started = spawnNode(RUNNER_BIN_PATH, ['start', '--http-port', '0', '--home', homeDir], environment);
    child = started.child;
    await waitForOutput(child, /listening on (\d+)\n/);
    expect(started.output()).toContain('warning: no DSTACK_RUNNER_TOKEN');
  });

  it('prints usage and exits 2 without --home', async () => {
    const started = spawnNode(RUNNER_BIN_PATH, ['start', '--http-port', '0']);
    child = started.child;
    expect(await waitForExit(child)).toBe(2);
    expect(started.output()).toContain('usage: dstack-runner start');
  });
});
