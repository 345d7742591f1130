/**
 * A real `dstack server` (the built bin) in a temporary directory: SQLite, the `main` project
 * and the local backend, as on a first start. Tests talk to it with the real CLI.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, waitFor } from './cli-harness.js';

export interface RealServer {
  url: string;
  /** The admin's token, as `dstack server` prints it. */
  token: string;
  stop(): Promise<void>;
}

export async function startRealServer(): Promise<RealServer> {
  const dir = mkdtempSync(join(tmpdir(), 'dstack-cli-real-server-'));
  const { DSTACK_PROJECT: _p, DSTACK_SERVER_URL: _u, DSTACK_TOKEN: _t, ...inherited } = process.env;
  const child: ChildProcess = spawn(process.execPath, [BIN, 'server', '--port', '0'], {
    env: {
      ...inherited,
      HOME: dir,
      NO_COLOR: '1',
      DSTACK_CLI_CONFIG_DIR: join(dir, 'cli'),
      DSTACK_SERVER_DIR: join(dir, 'server'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`dstack server exited: ${stderr}`);
        return /The server is running at (\S+)/.test(stdout) && /^The admin token is (\S+)$/m.test(stdout);
      },
      'dstack server to start',
      50_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const url = /The server is running at (\S+)/.exec(stdout)![1]!;
  const token = /^The admin token is (\S+)$/m.exec(stdout)![1]!;
  return { url, token, stop };
}
