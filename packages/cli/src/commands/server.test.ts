import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { saveCliConfig } from '../config/cli-config.js';
import type { CliIo } from '../io.js';
import { CommandError } from '../output/report-error.js';
import { type RunningServer, type ServerModule, serverCommand } from './server.js';

let directory: string;
const savedDirectory = process.env.DSTACK_CLI_CONFIG_DIR;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-cli-server-'));
  process.env.DSTACK_CLI_CONFIG_DIR = directory;
});

afterEach(() => {
  if (savedDirectory === undefined) delete process.env.DSTACK_CLI_CONFIG_DIR;
  else process.env.DSTACK_CLI_CONFIG_DIR = savedDirectory;
  rmSync(directory, { recursive: true, force: true });
});

function bufferIo() {
  const out: string[] = [];
  const io: CliIo = {
    stdout: (text) => out.push(text),
    stderr: (text) => out.push(text),
    stderrColors: false,
  };
  return { io, output: () => out.join('') };
}

/** Stop signals the test sends, and the exits the command asked for. */
function testSignals() {
  let listener: ((signal: NodeJS.Signals) => void) | undefined;
  const exits: number[] = [];
  return {
    dependencies: {
      onStopSignal(next: (signal: NodeJS.Signals) => void) {
        listener = next;
        return () => {
          listener = undefined;
        };
      },
      exit: (code: number) => {
        exits.push(code);
      },
    },
    send: (signal: NodeJS.Signals = 'SIGTERM') => listener?.(signal),
    listening: () => listener !== undefined,
    exits,
  };
}

/**
 * A stand-in for `@dstack/server` that records how it was started and closed. `afterStart` runs
 * once the start has been answered (e.g. sends the stop signal).
 */
function fakeServerModule(adminToken: string | null, afterStart: () => void = () => {}) {
  const calls: { started: unknown[]; closed: number } = { started: [], closed: 0 };
  const module: ServerModule = {
    async startServer(options): Promise<RunningServer> {
      calls.started.push(options);
      setImmediate(afterStart);
      return {
        url: 'http://127.0.0.1:3000',
        adminToken,
        close: async () => {
          calls.closed += 1;
        },
      };
    },
  };
  return { module, calls };
}

describe('serverCommand', () => {
  /** Runs `dstack server` with a stand-in server that stops at once; resolves with what it printed. */
  async function startOnce(adminToken: string | null, options: { yes?: boolean } = {}) {
    const signals = testSignals();
    const { module, calls } = fakeServerModule(adminToken, () => signals.send());
    const buffers = bufferIo();
    const code = await serverCommand(options, buffers.io, {
      loadServer: async () => module,
      ...signals.dependencies,
    });
    return { code, calls, output: buffers.output() };
  }

  const configPath = () => join(directory, 'config.yml');
  const savedConfig = () => parse(readFileSync(configPath(), 'utf8'));

  it('prints the token and URL, adds the main project and closes on shutdown', async () => {
    const signals = testSignals();
    const { module, calls } = fakeServerModule('admin-token', () => signals.send());
    const buffers = bufferIo();
    const code = await serverCommand({ host: '0.0.0.0', port: '3001' }, buffers.io, {
      loadServer: async () => module,
      ...signals.dependencies,
    });
    expect(code).toBe(0);
    expect(calls).toEqual({ started: [{ host: '0.0.0.0', port: 3001 }], closed: 1 });
    expect(buffers.output()).toBe(
      'The admin token is admin-token\n' +
        `Added project main in ${configPath()}\n` +
        'The server is running at http://127.0.0.1:3000\n',
    );
    expect(savedConfig()).toEqual({
      projects: [{ name: 'main', url: 'http://127.0.0.1:3000', token: 'admin-token', default: true }],
    });
    // The next start prints the token again and has nothing to change.
    expect((await startOnce('admin-token')).output).toBe(
      'The admin token is admin-token\nThe server is running at http://127.0.0.1:3000\n',
    );
  });

  it('adds main beside other projects without taking their default', async () => {
    const other = { name: 'other', url: 'http://example.com', token: 'x', default: true };
    await saveCliConfig({ projects: [other] }, configPath());
    await startOnce('admin-token');
    expect(savedConfig()).toEqual({
      projects: [other, { name: 'main', url: 'http://127.0.0.1:3000', token: 'admin-token', default: false }],
    });
  });

  it('leaves a main project pointing elsewhere as it is, unless -y', async () => {
    const mine = { name: 'main', url: 'http://10.0.0.5:3000', token: 'mine', default: true };
    await saveCliConfig({ projects: [mine] }, configPath());
    const kept = await startOnce('admin-token');
    expect(kept.output).toBe(
      'The admin token is admin-token\n' +
        `Left project main in ${configPath()} as it is (another URL or token); dstack server -y points it here\n` +
        'The server is running at http://127.0.0.1:3000\n',
    );
    expect(savedConfig()).toEqual({ projects: [mine] });
    const replaced = await startOnce('admin-token', { yes: true });
    expect(replaced.output).toContain(`Updated project main in ${configPath()}\n`);
    expect(savedConfig()).toEqual({
      projects: [{ name: 'main', url: 'http://127.0.0.1:3000', token: 'admin-token', default: true }],
    });
  });

  it('says how to set a token when the server does not know it, and leaves the configuration alone', async () => {
    const { output } = await startOnce(null);
    expect(output).toBe(
      'The admin token is not known to this server (only its hash is stored): set DSTACK_SERVER_ADMIN_TOKEN to choose a new one\n' +
        'The server is running at http://127.0.0.1:3000\n',
    );
    expect(() => readFileSync(configPath())).toThrow();
  });

  it('rejects a bad port before starting anything', async () => {
    const { module, calls } = fakeServerModule('token');
    await expect(
      serverCommand({ port: 'http' }, bufferIo().io, { loadServer: async () => module }),
    ).rejects.toThrow("--port: expected a port number (0-65535), got 'http'");
    expect(calls.started).toEqual([]);
  });

  it('ends the process at once on a stop signal during start-up', async () => {
    const signals = testSignals();
    let finishStart = (_server: RunningServer) => {};
    const module: ServerModule = {
      startServer: () =>
        new Promise((resolve) => {
          finishStart = resolve;
        }),
    };
    const command = serverCommand({}, bufferIo().io, {
      loadServer: async () => module,
      ...signals.dependencies,
    });
    await waitUntil(signals.listening);
    signals.send('SIGTERM');
    expect(signals.exits).toEqual([143]);
    // (The process is gone by now; here the start finishes, and a signal closes it.)
    let closed = 0;
    finishStart({ url: 'http://127.0.0.1:3000', adminToken: null, close: async () => void closed++ });
    setImmediate(() => signals.send('SIGINT'));
    expect(await command).toBe(0);
    expect(closed).toBe(1);
  });

  it('ends the process at once on a second stop signal while the server closes', async () => {
    const signals = testSignals();
    let closing = false;
    const module: ServerModule = {
      async startServer() {
        setImmediate(() => signals.send('SIGTERM'));
        return {
          url: 'http://127.0.0.1:3000',
          adminToken: null,
          // A close that never ends (an agent that does not answer).
          close: () => {
            closing = true;
            return new Promise(() => {});
          },
        };
      },
    };
    void serverCommand({}, bufferIo().io, { loadServer: async () => module, ...signals.dependencies });
    await waitUntil(() => closing);
    expect(signals.exits).toEqual([]);
    signals.send('SIGINT');
    expect(signals.exits).toEqual([130]);
  });

  it('reports a failed start as one line, and stops listening for signals', async () => {
    const signals = testSignals();
    const module: ServerModule = {
      startServer: async () => {
        throw new Error('port 8000 on 127.0.0.1 is in use (EADDRINUSE)');
      },
    };
    const failed = serverCommand({}, bufferIo().io, {
      loadServer: async () => module,
      ...signals.dependencies,
    });
    await expect(failed).rejects.toThrow(CommandError);
    await expect(failed).rejects.toThrow('port 8000 on 127.0.0.1 is in use (EADDRINUSE)');
    expect(signals.listening()).toBe(false);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let attempt = 0; !condition(); attempt++) {
    if (attempt > 1_000) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
