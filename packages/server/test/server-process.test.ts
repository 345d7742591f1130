/**
 * `dstack-server` as a real child process: a second server that cannot have its port, or whose
 * SQLite database another server has, exits with one line before it touches the database (the
 * first server's claims stay as they are); a stop signal ends the process during start-up and
 * after it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTempDir } from './server-harness.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

// The built bin (the suite's `pnpm test` builds first).
const BIN = fileURLToPath(new URL('../dist/bin/dstack-server.js', import.meta.url));

interface ServerProcess {
  child: ChildProcess;
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code (128 + signal number when a signal ended it). */
  exited: Promise<number>;
}

const children: ChildProcess[] = [];

function startProcess(env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DSTACK_SERVER_PORT: '0', ...env },
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
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15))),
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

/** The URL a started server printed. */
function runningUrl(server: ServerProcess): Promise<string> {
  return until('the server to start', () => {
    const { stdout, stderr } = server.output();
    if (server.child.exitCode !== null) throw new Error(`the server exited: ${stderr}`);
    return /The server is running at (\S+)/.exec(stdout)?.[1];
  });
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: run \`pnpm build\` before these tests`);
});

describe('a second dstack-server', () => {
  const temp = makeTempDir('dstack-server-process-');
  afterAll(() => temp.remove());

  it('on a busy port, or on a SQLite database in use, exits with one line and leaves the first alone', async () => {
    const env = { DSTACK_SERVER_DIR: temp.dir, DSTACK_SERVER_ADMIN_TOKEN: 'process-test-token' };
    const first = startProcess(env);
    const url = await runningUrl(first);
    const port = new URL(url).port;

    // A claim the first server holds (as its pipelines do while they work on a row).
    const database = new BetterSqlite3(join(temp.dir, 'data', 'sqlite.db'), { timeout: 5_000 });
    const heldUntil = Date.now() + 3_600_000;
    database
      .prepare(
        `insert into fleets (id, project_id, name, status, spec, created_at, last_processed_at,
           lock_token, lock_owner, lock_expires_at)
         values ('held', 'p', 'held', 'terminated', '{}', 0, 0, 'first-server-claim', 'first', ?)`,
      )
      .run(heldUntil);
    const claim = () =>
      database.prepare('select lock_token, lock_owner, lock_expires_at from fleets where id = ?').get('held');

    const samePort = startProcess({ ...env, DSTACK_SERVER_PORT: port });
    expect(await samePort.exited).toBe(1);
    expect(samePort.output().stderr).toBe(`error: port ${port} on 127.0.0.1 is in use (EADDRINUSE)\n`);

    const sameDatabase = startProcess(env);
    expect(await sameDatabase.exited).toBe(1);
    const sqlite = join(temp.dir, 'data', 'sqlite.db');
    expect(sameDatabase.output().stderr).toBe(
      `error: the SQLite database ${sqlite} is in use by another dstack server (${sqlite}.server-lock is locked)\n`,
    );

    expect(claim()).toEqual({
      lock_token: 'first-server-claim',
      lock_owner: 'first',
      lock_expires_at: heldUntil,
    });
    database.close();
    const answer = await fetch(`${url}/api/users/get_my_user`, {
      method: 'POST',
      headers: { authorization: 'Bearer process-test-token' },
    });
    expect(answer.status).toBe(200);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    // Its lock went with it: the next server gets the database.
    const next = startProcess(env);
    await runningUrl(next);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  });
});

describe('a stop signal', () => {
  const temp = makeTempDir('dstack-server-signal-');
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
    temp.remove();
  });

  it('during start-up ends the process', async () => {
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const before = accepted.length;
    const server = startProcess({
      DSTACK_SERVER_DIR: temp.dir,
      DSTACK_DATABASE_URL: `postgresql://dstack@127.0.0.1:${port}/dstack`,
    });
    await until('the server to connect to the database', () => (accepted.length > before ? true : null));
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(143);
    expect(server.output().stdout).toBe('');
  });

  it('after start-up closes the server and exits 0', async () => {
    const server = startProcess({ DSTACK_SERVER_DIR: temp.dir });
    const url = await runningUrl(server);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });
});

describe('dstack-server with DSTACK_ENABLE_PROMETHEUS_METRICS', () => {
  const temp = makeTempDir('dstack-server-metrics-');
  afterAll(() => temp.remove());

  it('warns at start that /metrics names every project, user and run when no token guards it', async () => {
    const open = startProcess({
      DSTACK_SERVER_DIR: join(temp.dir, 'open'),
      DSTACK_ENABLE_PROMETHEUS_METRICS: '',
    });
    await runningUrl(open);
    expect(open.output().stderr).toContain(
      "[dstack-server] GET /metrics is open to anyone who reaches the server (DSTACK_ENABLE_PROMETHEUS_METRICS is set, DSTACK_PROMETHEUS_AUTH_TOKEN is not): it lists every project's name, its users' names, run names and run ids",
    );
    open.child.kill('SIGTERM');
    expect(await open.exited).toBe(0);

    const guarded = startProcess({
      DSTACK_SERVER_DIR: join(temp.dir, 'guarded'),
      DSTACK_ENABLE_PROMETHEUS_METRICS: '1',
      DSTACK_PROMETHEUS_AUTH_TOKEN: 'scrape-token',
    });
    await runningUrl(guarded);
    expect(guarded.output().stderr).not.toContain('/metrics');
    guarded.child.kill('SIGTERM');
    expect(await guarded.exited).toBe(0);
  });
});
