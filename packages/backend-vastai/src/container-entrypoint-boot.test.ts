/**
 * The entrypoint a Vast.ai rental gets (core's `buildContainerEntrypoint`) boots for real in
 * images without node: a static busybox and a musl one. Each runs as a Docker container on a
 * network of the test's own; the runtime is served from this machine's address there (the
 * gateway), as a release publishes it (the runtime package's npm tarball) and as a server hosts
 * its own (`writePortableRuntimeArchive`). The test logs in on the runner's SSH port with the project key, forwards the
 * runner's HTTP port as the server does, and sees the runner answer and require its token.
 * Stopped while the download hangs, the container ends on SIGTERM, not on the kill after the
 * grace period (as PID 1, a shell without a trap ignores SIGTERM).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { promisify } from 'node:util';
import { buildContainerEntrypoint, generateEd25519KeyPair } from '@dstack/core';
import {
  DSTACK_RUNNER_HTTP_PORT,
  DSTACK_RUNNER_SSH_PORT,
  RUNNER_TOKEN_ENV,
} from '@dstack/core/agent-protocol';
import {
  bridgeGateway,
  ensureRunnerTestImages,
  RUNNER_BUSYBOX_TEST_IMAGE,
  RUNNER_MUSL_TEST_IMAGE,
  type RunnerRuntimeServer,
  serveRunnerRuntime,
} from '@dstack/testing/emulators';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);

const NETWORK = `dstack-test-entrypoint-${randomBytes(4).toString('hex')}`;
type RuntimeFormat = 'published-package' | 'archive';
/** Both layouts in the glibc-less image; the published one in the musl image too. */
const CASES: ReadonlyArray<readonly [string, RuntimeFormat]> = [
  [RUNNER_BUSYBOX_TEST_IMAGE, 'published-package'],
  [RUNNER_MUSL_TEST_IMAGE, 'published-package'],
  [RUNNER_BUSYBOX_TEST_IMAGE, 'archive'],
];
const runtimes = new Map<RuntimeFormat, RunnerRuntimeServer>();
const containers: string[] = [];

/** `GET path` on the runner's HTTP port through an SSH `direct-tcpip` channel; the status and body. */
function requestOverSsh(
  host: string,
  privateKey: string,
  path: string,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    client
      .once('ready', () => {
        client.forwardOut('127.0.0.1', 0, '127.0.0.1', DSTACK_RUNNER_HTTP_PORT, (error, stream) => {
          if (error) {
            client.end();
            reject(error);
            return;
          }
          let answer = '';
          stream.on('data', (chunk: Buffer) => {
            answer += chunk.toString('utf8');
          });
          stream.once('close', () => {
            client.end();
            const status = Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1]);
            resolve({ status, body: answer.slice(answer.indexOf('\r\n\r\n') + 4) });
          });
          const authorization = token ? `Authorization: Bearer ${token}\r\n` : '';
          stream.end(`GET ${path} HTTP/1.1\r\nHost: runner\r\n${authorization}Connection: close\r\n\r\n`);
        });
      })
      .once('error', (error) => {
        client.end();
        reject(error);
      })
      .connect({ host, port: DSTACK_RUNNER_SSH_PORT, username: 'root', privateKey, readyTimeout: 5_000 });
  });
}

async function untilAnswers<T>(attempt: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

beforeAll(async () => {
  await ensureRunnerTestImages();
  await run('docker', ['network', 'create', NETWORK]);
  for (const format of ['published-package', 'archive'] as const) {
    runtimes.set(format, await serveRunnerRuntime({ network: NETWORK, format }));
  }
}, 300_000);

afterAll(async () => {
  await Promise.all(containers.map((id) => run('docker', ['rm', '-f', id]).catch(() => undefined)));
  await run('docker', ['network', 'rm', NETWORK]).catch(() => undefined);
  await Promise.all([...runtimes.values()].map((runtime) => runtime.close()));
});

describe('the container entrypoint', () => {
  for (const [image, format] of CASES) {
    it(`starts the runner of the ${format} in ${image} (no node), reachable over SSH with the project key only`, async () => {
      const projectKey = generateEd25519KeyPair();
      const otherKey = generateEd25519KeyPair();
      const token = randomBytes(16).toString('hex');
      const script = buildContainerEntrypoint({
        runtimeDownloadUrl: runtimes.get(format)?.url,
        sshAuthorizedKeys: [projectKey.publicKey],
      });
      const { stdout } = await run('docker', [
        'run',
        '-d',
        '--label',
        'dstack-test=container-entrypoint',
        '-e',
        `${RUNNER_TOKEN_ENV}=${token}`,
        '--network',
        NETWORK,
        '--entrypoint',
        '/bin/sh',
        image,
        '-c',
        script,
      ]);
      const id = stdout.trim();
      containers.push(id);
      const { stdout: inspected } = await run('docker', [
        'inspect',
        '-f',
        '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}',
        id,
      ]);
      const address = inspected.trim();

      const health = await untilAnswers(
        () => requestOverSsh(address, projectKey.privateKey, '/api/healthcheck'),
        60_000,
      );
      const withoutToken = await requestOverSsh(address, projectKey.privateKey, '/api/pull?timestamp=0');
      const withToken = await requestOverSsh(address, projectKey.privateKey, '/api/pull?timestamp=0', token);
      const otherLogin = await requestOverSsh(address, otherKey.privateKey, '/api/healthcheck').then(
        () => 'accepted',
        (error: Error) => error.message,
      );

      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({ service: 'dstack-runner' });
      expect(withoutToken.status).toBe(401);
      expect(withToken.status).toBe(200);
      expect(otherLogin).toMatch(/authentication methods failed/i);
    }, 180_000);
  }

  it('ends on SIGTERM while the runner download hangs, without waiting for the kill', async () => {
    // A server that takes the download request and never answers: the entrypoint is inside it.
    let requests = 0;
    const stalled: Server = createServer(() => {
      requests += 1;
    });
    const host = await bridgeGateway(NETWORK);
    await new Promise<void>((resolve) => stalled.listen(0, host, resolve));
    try {
      const { port } = stalled.address() as { port: number };
      const script = buildContainerEntrypoint({
        runtimeDownloadUrl: `http://${host}:${port}/runtime.tgz`,
        sshAuthorizedKeys: [generateEd25519KeyPair().publicKey],
      });
      const { stdout } = await run('docker', [
        'run',
        '-d',
        '--label',
        'dstack-test=container-entrypoint',
        '--network',
        NETWORK,
        '--entrypoint',
        '/bin/sh',
        RUNNER_BUSYBOX_TEST_IMAGE,
        '-c',
        script,
      ]);
      const id = stdout.trim();
      containers.push(id);
      await untilAnswers(async () => {
        if (requests === 0) throw new Error('the entrypoint has not asked for the runner yet');
      }, 60_000);

      // A grace period longer than the test's timeout: only the trap ends the container in time.
      await run('docker', ['stop', '-t', '600', id]);
      const { stdout: exitCode } = await run('docker', ['inspect', '-f', '{{.State.ExitCode}}', id]);
      const { stderr: logs } = await run('docker', ['logs', id]);

      expect(exitCode.trim()).toBe('143');
      expect(logs).toContain('dstack: stopped before the runner started');
    } finally {
      stalled.closeAllConnections();
      await new Promise((resolve) => stalled.close(resolve));
    }
  }, 120_000);
});
