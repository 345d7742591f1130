/**
 * SSH into a dev environment end to end, the whole way a user's `ssh RUN` goes: an SSH client
 * over an upgrade to the server's `/proxy/ssh/main/{run}`, which the server joins to the job's
 * real runner (`/api/ssh`, its ssh2 server) on the local backend. The runner authorizes the
 * key the run was applied with (`run_spec.ssh_key_pub`).
 */
import ssh2 from 'ssh2';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { generateProjectSshKeyPair } from '../src/agents/ssh-keys.js';
import { requestUpgrade } from '../src/http/upgrade-request.test.helpers.js';
import {
  ADMIN_TOKEN,
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** Runs `command` over SSH through the server's proxy; resolves with its output and exit code. */
async function sshExec(
  harness: HarnessServer,
  runName: string,
  privateKey: string,
  command: string,
): Promise<{ output: string; code: number | null }> {
  const upgrade = await requestUpgrade(`${harness.server.url}/proxy/ssh/main/${runName}`, {
    authorization: `Bearer ${ADMIN_TOKEN}`,
    upgrade: 'ssh',
  });
  if (upgrade.kind !== 'switched')
    throw new Error(`no tunnel: ${upgrade.response.statusCode} ${upgrade.body}`);
  // Bytes that came with the 101 (the runner's SSH banner) belong to the SSH stream.
  if (upgrade.head.length > 0) upgrade.socket.unshift(upgrade.head);
  const client = new ssh2.Client();
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', reject);
      client.connect({ sock: upgrade.socket, username: 'root', privateKey });
    });
    return await new Promise((resolve, reject) => {
      client.exec(command, (error, channel) => {
        if (error) return reject(error);
        let output = '';
        let code: number | null = null;
        channel.on('data', (chunk: Buffer) => {
          output += chunk.toString();
        });
        channel.stderr.on('data', (chunk: Buffer) => {
          output += chunk.toString();
        });
        channel.once('exit', (exitCode: number | null) => {
          code = exitCode;
        });
        channel.once('close', () => resolve({ output, code }));
      });
    });
  } finally {
    client.end();
  }
}

describeEachDatabase('SSH into a dev environment on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  const key = generateProjectSshKeyPair();
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('runs init, stays up, and takes SSH logins with the key the run was applied with', async () => {
    const applied = await harness.call('/api/project/main/runs/apply', {
      plan: {
        run_spec: {
          ssh_key_pub: key.publicKey,
          configuration: {
            type: 'dev-environment',
            name: 'dev',
            ide: 'vscode',
            init: ['echo init-done'],
            env: { GREETING: 'hello' },
            resources: HOST_RESOURCES,
          },
        },
      },
    });
    expect(applied.status).toBe(200);
    const running = await harness.waitForRun('dev', ['running', 'failed', 'terminated', 'done']);
    expect(running.status).toBe('running');

    const answer = await sshExec(harness, 'dev', key.privateKey, 'echo "$DSTACK_RUN_NAME $GREETING"; exit 3');
    expect(answer).toEqual({ output: 'dev hello\n', code: 3 });
    // `init` ran before the environment settled into waiting (its logs arrive with the next pull).
    await waitFor('the init logs', async () =>
      (await harness.logs('dev')).includes('init-done') ? true : null,
    );

    // A key the run was not applied with is refused by the runner.
    await expect(sshExec(harness, 'dev', generateProjectSshKeyPair().privateKey, 'true')).rejects.toThrow(
      /authentication/i,
    );

    // The environment stays up until it is stopped.
    expect((await harness.waitForRun('dev', ['running'])).status).toBe('running');
    expect(
      (await harness.call('/api/project/main/runs/stop', { runs_names: ['dev'], abort: false })).status,
    ).toBe(200);
    const stopped = await harness.waitForRun('dev', ['terminated', 'failed', 'done']);
    expect(stopped.status).toBe('terminated');
  });
});
