/**
 * `dstack server` (the built bin) as a real child process: a second one on a busy port exits
 * with one line and leaves the first server's claims alone; a stop signal ends it during
 * start-up and after it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

// The built bins (the suite's `pnpm test` builds first).
const BIN = fileURLToPath(new URL('../../dist/bin/dstack.js', import.meta.url));

interface CommandProcess {
  child: ChildProcess;
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code (128 + 15 when SIGTERM itself ended it). */
  exited: Promise<number>;
}

/** The server's own SQLite driver (a dependency of @dstack/server, not of the CLI), to read its database. */
const BetterSqlite3 = createRequire(createRequire(import.meta.url).resolve('@dstack/server/package.json'))(
  'better-sqlite3',
) as new (
  filename: string,
  options?: { timeout?: number },
) => {
  prepare(sql: string): { run(...values: unknown[]): unknown; get(...values: unknown[]): unknown };
  close(): void;
};

let dir: string;
const children: ChildProcess[] = [];

function dstackServer(args: string[], env: Record<string, string> = {}): CommandProcess {
  const child = spawn(process.execPath, [BIN, 'server', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      NO_COLOR: '1',
      DSTACK_CLI_CONFIG_DIR: join(dir, 'cli'),
      DSTACK_SERVER_DIR: join(dir, 'server'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGTERM' ? 143 : -1))),
  );
  return { child, output: () => ({ stdout, stderr }), exited };
}

async function until<T>(what: string, probe: () => T | null | undefined): Promise<T> {
  for (let attempt = 0; attempt < 3_000; attempt++) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function runningUrl(server: CommandProcess): Promise<string> {
  return until('the server to start', () => {
    if (server.child.exitCode !== null) throw new Error(`the server exited: ${server.output().stderr}`);
    return /The server is running at (\S+)/.exec(server.output().stdout)?.[1];
  });
}

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: run \`pnpm build\` before these tests`);
  dir = mkdtempSync(join(tmpdir(), 'dstack-cli-server-'));
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('dstack server (built bin)', () => {
  it('on a busy port exits with one line before touching the database', async () => {
    const first = dstackServer(['--port', '0']);
    const url = await runningUrl(first);
    const port = new URL(url).port;
    const database = new BetterSqlite3(join(dir, 'server', 'data', 'sqlite.db'), { timeout: 5_000 });
    database
      .prepare(
        `insert into fleets (id, project_id, name, status, spec, created_at, last_processed_at,
           lock_token, lock_owner, lock_expires_at)
         values ('held', 'p', 'held', 'terminated', '{}', 0, 0, 'first-server-claim', 'first', 1)`,
      )
      .run();

    const second = dstackServer(['--port', port]);
    expect(await second.exited).toBe(1);
    expect(second.output()).toEqual({
      stdout: '',
      stderr: `error: port ${port} on 127.0.0.1 is in use (EADDRINUSE)\n`,
    });
    expect(database.prepare('select lock_token from fleets where id = ?').get('held')).toEqual({
      lock_token: 'first-server-claim',
    });
    database.close();

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('prints the admin token at every start, also after a first start failed on config.yml', async () => {
    const serverDir = join(dir, 'restarts', 'server');
    const cliDir = join(dir, 'restarts', 'cli');
    const env = { DSTACK_SERVER_DIR: serverDir, DSTACK_CLI_CONFIG_DIR: cliDir };
    const configYml = join(serverDir, 'config.yml');
    mkdirSync(serverDir, { recursive: true });
    writeFileSync(
      configYml,
      'projects:\n  - name: main\n    backends:\n      - type: local\n        runtime: bogus\n',
    );
    const failed = dstackServer(['--port', '0'], env);
    expect(await failed.exited).toBe(1);
    expect(failed.output().stderr).toContain('runtime');
    writeFileSync(configYml, 'projects:\n  - name: main\n    backends:\n      - type: local\n');

    const cliConfig = () => parse(readFileSync(join(cliDir, 'config.yml'), 'utf8'));
    const starts: Array<{ url: string; token: string; stdout: string }> = [];
    for (let start = 0; start < 2; start++) {
      const server = dstackServer(['--port', '0'], env);
      const url = await runningUrl(server);
      const { stdout } = server.output();
      const token = /^The admin token is (\S+)$/m.exec(stdout)?.[1];
      expect(token, stdout).toBeDefined();
      starts.push({ url, token: token!, stdout });
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }
    const [first, second] = starts as [(typeof starts)[0], (typeof starts)[0]];
    expect(second.token).toBe(first.token);
    // Written when absent; the second start (another port) leaves it as the user has it.
    expect(first.stdout).toContain(`Added project main in ${join(cliDir, 'config.yml')}`);
    expect(second.stdout).toContain('Left project main');
    expect(cliConfig()).toEqual({
      projects: [{ name: 'main', url: first.url, token: first.token, default: true }],
    });
  });

  describe('stopped by SIGTERM', () => {
    /** A "Postgres" that accepts connections and never answers: the start waits on it. */
    let silent: Server;
    const accepted: Socket[] = [];

    beforeAll(async () => {
      silent = createServer((socket) => accepted.push(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    });

    afterAll(async () => {
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    it('during start-up ends the process', async () => {
      const address = silent.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const server = dstackServer(['--port', '0'], {
        DSTACK_DATABASE_URL: `postgresql://dstack@127.0.0.1:${port}/dstack`,
      });
      await until('the server to connect to the database', () => (accepted.length > 0 ? true : null));
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(143);
    });

    it('after start-up closes the server and exits 0', async () => {
      const server = dstackServer(['--port', '0']);
      const url = await runningUrl(server);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      await expect(fetch(url)).rejects.toThrow();
    });
  });
});
