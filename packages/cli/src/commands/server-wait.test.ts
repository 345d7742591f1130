/** A server that takes the connection and never answers: a notice, then a clear timeout. */
import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeLogEvent, makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer, StreamAnswer } from '../__fixtures__/fake-dstack-server.js';
import { ServerTimeoutError } from '../api/api-errors.js';
import { openSshTunnel } from '../api/ssh-tunnel.js';
import type { CliIo } from '../io.js';
import { run } from '../program.js';

/** Accepts connections, reads what comes and never writes a byte. */
class SilentServer {
  readonly #sockets = new Set<Socket>();
  readonly #server: Server = createServer((socket) => {
    this.#sockets.add(socket);
    socket.on('data', () => {});
    socket.on('close', () => this.#sockets.delete(socket));
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

let harness: CliHarness;
let silent: SilentServer;

beforeEach(async () => {
  harness = new CliHarness();
  silent = await new SilentServer().start();
  await harness.useProject(silent.url, 'test-token');
});

afterEach(async () => {
  vi.unstubAllEnvs();
  harness.cleanUp();
  await silent.close();
});

describe('a server that never answers', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('ends the command with a timeout error naming the server, after DSTACK_CLI_TIMEOUT seconds', async () => {
    const result = await harness.run(['ps'], { DSTACK_CLI_TIMEOUT: '1.5' });
    expect(result).toEqual({
      code: 1,
      signal: null,
      stdout: '',
      stderr: `error: the server at ${silent.url} did not answer within 1.5 s; set DSTACK_CLI_TIMEOUT (seconds) to wait longer\n`,
    });
  });

  it('shows a wait notice on a terminal, erased before the error', async () => {
    vi.stubEnv('HOME', harness.home);
    vi.stubEnv('DSTACK_CLI_CONFIG_DIR', undefined);
    vi.stubEnv('DSTACK_PROJECT', undefined);
    vi.stubEnv('DSTACK_CLI_TIMEOUT', '2');
    let stderr = '';
    const io: CliIo = {
      stdout: () => {},
      stderr: (text) => {
        stderr += text;
      },
      stderrColors: false,
      stderrIsTerminal: true,
    };
    expect(await run(['node', 'dstack', 'ps'], io)).toBe(1);
    const clear = '\r\u001b[2K';
    expect(stderr).toContain(`${clear}⠋ Waiting for the server at ${silent.url}…`);
    expect(
      stderr.endsWith(
        `${clear}error: the server at ${silent.url} did not answer within 2 s`.concat(
          '; set DSTACK_CLI_TIMEOUT (seconds) to wait longer\n',
        ),
      ),
    ).toBe(true);
  });

  it('refuses a DSTACK_CLI_TIMEOUT that is not a number of seconds', async () => {
    const result = await harness.run(['ps'], { DSTACK_CLI_TIMEOUT: 'soon' });
    expect([result.code, result.stderr]).toEqual([
      1,
      "error: DSTACK_CLI_TIMEOUT: expected a number of seconds greater than 0, got 'soon'\n",
    ]);
  });

  it('times out opening the SSH tunnel too', async () => {
    const opening = openSshTunnel({
      serverUrl: silent.url,
      token: 'test-token',
      projectName: 'main',
      runName: 'train',
      timeoutMs: 500,
    });
    await expect(opening).rejects.toSatisfy(
      (error) => ServerTimeoutError.isInstance(error) && error.serverUrl === silent.url,
    );
  });
});

describe('streams', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('are not cut by the timeout: logs -f outlives gaps longer than it', async () => {
    const server = await FakeDstackServer.start({
      handlers: {
        'runs/get': () => makeRun({ name: 'train', status: 'running' }),
        'logs/stream': () =>
          new StreamAnswer(
            (async function* () {
              // As the real server: headers and a heartbeat at once, then silence until events.
              yield { heartbeat: true, next_token: null };
              for (const index of [0, 1]) {
                await sleep(2_500);
                yield { ...makeLogEvent('stdout', `line ${index}\n`, index), next_token: String(index + 1) };
              }
              yield { end: 'run_finished', status: 'done', next_token: '2' };
            })(),
          ),
      },
    });
    try {
      await harness.useProject(server.url, server.token);
      const result = await harness.run(['logs', 'train', '-f'], { DSTACK_CLI_TIMEOUT: '1' });
      expect(result).toMatchObject({ code: 0, stdout: 'line 0\nline 1\n', stderr: '' });
      expect(server.problems).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
