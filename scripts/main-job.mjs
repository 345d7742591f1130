#!/usr/bin/env node
/**
 * The README's main job, end to end on the embedded default: starts `dstack server`
 * (SQLite + the local backend) in a fresh directory, applies a configuration
 * (default examples/hello.dstack.yml) with `dstack apply -y`, streams its output
 * until the run ends, then deletes the local fleet so no instance is left running
 * and stops the server. Exits with `dstack apply`'s exit code.
 *
 *   node scripts/main-job.mjs [FILE]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dstack = join(root, 'packages/cli/dist/bin/dstack.js');
const file = resolve(process.argv[2] ?? join(root, 'examples/hello.dstack.yml'));
const home = mkdtempSync(join(tmpdir(), 'dstack-main-job-'));
const env = {
  ...process.env,
  DSTACK_SERVER_DIR: join(home, 'server'),
  DSTACK_CLI_CONFIG_DIR: join(home, 'cli'),
  NO_COLOR: process.env.NO_COLOR ?? '',
};

function startServer() {
  const server = spawn(process.execPath, [dstack, 'server', '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolveStart, rejectStart) => {
    let output = '';
    let token = null;
    server.stdout.on('data', (chunk) => {
      output += chunk;
      token ??= /The admin token is (\S+)/.exec(output)?.[1] ?? null;
      const url = /The server is running at (\S+)/.exec(output)?.[1];
      if (url && token) resolveStart({ server, url, token });
    });
    server.once('exit', (code) => rejectStart(new Error(`dstack server exited with ${code}:\n${output}`)));
  });
}

function run(args) {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [dstack, ...args], { env, stdio: 'inherit' });
    child.once('exit', (code) => resolveRun(code ?? 1));
  });
}

/** Waits until the project has no fleet left: its instances' shim processes are terminated. */
async function waitForFleetsGone(url, token) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/api/project/main/fleets/list`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    if ((await response.json()).length === 0) return;
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
  console.error('warning: the local fleet did not terminate within 60 s');
}

const { server, url, token } = await startServer();
let exitCode = 1;
try {
  console.log(`Server at ${url} (SQLite in ${env.DSTACK_SERVER_DIR})`);
  exitCode = await run(['apply', '-f', file, '-y']);
  await run(['fleet', 'delete', 'local', '-y']);
  await waitForFleetsGone(url, token);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolveExit) => server.once('exit', resolveExit));
  rmSync(home, { recursive: true, force: true });
}
process.exit(exitCode);
