import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { RUNNER_BUNDLE_PATH } from '../paths.js';
import {
  buildIfMissing,
  type Child,
  spawnNode,
  waitForExit,
  waitForOutput,
} from '../testing/child-process.test.helpers.js';
import { submitBody } from '../testing/runner-job.test.helpers.js';
import { generateClientKey, proxyCommandScript } from '../testing/ssh.test.helpers.js';

const OPENSSH_CLIENT = '/usr/bin/ssh';
const hasOpenSsh = existsSync(OPENSSH_CLIENT);
if (!hasOpenSsh) console.warn(`skipping the OpenSSH interoperability test: no ${OPENSSH_CLIENT}`);

describe.skipIf(!hasOpenSsh)('OpenSSH through the bundled runner', () => {
  let workDir: string;
  let runner: Child | undefined;

  beforeAll(() => {
    buildIfMissing(RUNNER_BUNDLE_PATH, '@dstack/runner');
  }, 120_000);

  beforeEach(() => {
    workDir = mkdtempSync(join(tmpdir(), 'dstack-runner-openssh-'));
  });

  afterEach(async () => {
    // SIGTERM: the runner then kills its job, which SIGKILL would leave behind.
    if (runner !== undefined && runner.exitCode === null && runner.signalCode === null) {
      runner.kill('SIGTERM');
      await waitForExit(runner);
    }
    runner = undefined;
    rmSync(workDir, { recursive: true, force: true });
  });

  it('runs a command over a ProxyCommand that upgrades GET /api/ssh', async () => {
    runner = spawnNode(RUNNER_BUNDLE_PATH, [
      'start',
      '--http-port',
      '0',
      '--home',
      join(workDir, 'home'),
    ]).child;
    const [, port] = await waitForOutput(runner, /listening on (\d+)\n/);
    const runnerUrl = `http://127.0.0.1:${port}`;
    const key = generateClientKey();
    const body = submitBody(['sleep 600']);
    body.run.run_spec = { ssh_key_pub: key.publicLine };
    const client = new RunnerClient(runnerUrl);
    await client.submit(body);
    await client.run();

    const keyFile = join(workDir, 'id_rsa');
    writeFileSync(keyFile, key.privateKey, { mode: 0o600 });
    const proxyScript = join(workDir, 'proxy.cjs');
    writeFileSync(proxyScript, proxyCommandScript(runnerUrl));
    const { stdout } = await promisify(execFile)(OPENSSH_CLIENT, [
      '-F',
      '/dev/null',
      '-o',
      `ProxyCommand="${process.execPath}" "${proxyScript}"`,
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'LogLevel=ERROR',
      '-i',
      keyFile,
      'root@job',
      'echo hi',
    ]);
    expect(stdout).toBe('hi\n');
  });
});
