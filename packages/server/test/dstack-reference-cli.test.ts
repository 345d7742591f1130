/**
 * dstack 0.21.2's own CLI and Python API against this server on the local backend, run for real
 * (dstack-reference-cli.ts builds it from dstack's source). `dstack apply -f task.yml -y`
 * (attached) waits for the job, attaches through this server's SSH proxy (`sshproxy_*` in
 * `job_connection_info`), prints the task's output and its exit; `projects.list()` sends
 * `include_not_joined: true`.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  prepareReferenceCli,
  referenceCliUnavailable,
  runReferenceCli,
  runReferencePython,
} from './dstack-reference-cli.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

// The first run on a machine builds the reference CLI's venv from the local index (~30 s).
vi.setConfig({ testTimeout: 120_000, hookTimeout: 240_000 });

const execFileAsync = promisify(execFile);
const unavailable = referenceCliUnavailable();
if (unavailable) console.warn(`dstack's reference CLI is not run: ${unavailable}`);

describe.skipIf(unavailable !== null)("dstack 0.21.2's own CLI against this server", () => {
  const temp = makeTempDir('dstack-reference-cli-');
  const home = join(temp.dir, 'home');
  const work = join(temp.dir, 'work');
  let harness: HarnessServer;
  let cli: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    cli = await prepareReferenceCli();
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      config: localBackendConfig(temp.dir),
      // As `dstack server` runs by default: dstack's client sees a quick job running long enough to attach.
      env: { DSTACK_SERVER_ATTACH_WINDOW_SECONDS: '10' },
    });
    mkdirSync(join(home, '.dstack', 'ssh'), { recursive: true });
    mkdirSync(work);
    env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', COLUMNS: '160' };
    // dstack's client checks the SSH proxy's host key against the user's known hosts, as with
    // dstack's own sshproxy; a user accepts it at the first prompt, the test learns it beforehand.
    // ssh reads `~` from the passwd entry, not $HOME: name the file in dstack's ssh config.
    const proxy = harness.server.sshProxy;
    if (!proxy) throw new Error('the server runs no SSH proxy');
    const { hostname, port } = proxy;
    const knownHosts = join(home, '.ssh', 'known_hosts');
    mkdirSync(join(home, '.ssh'));
    // Asynchronously: the proxy answers from this process. ssh-keyscan exits 1 when a key type it
    // asks for is not offered, so its lines are what counts.
    const scanned = await execFileAsync('ssh-keyscan', ['-p', String(port), hostname]).catch(
      (error) => error,
    );
    if (!String(scanned.stdout).includes(' ssh-'))
      throw new Error(`ssh-keyscan found no host key: ${scanned.stderr}`);
    writeFileSync(knownHosts, scanned.stdout);
    writeFileSync(join(home, '.dstack', 'ssh', 'config'), `Host *\n    UserKnownHostsFile ${knownHosts}\n\n`);
    const added = await runReferenceCli(
      cli,
      ['project', 'add', '--name', 'main', '--url', harness.server.url, '--token', ADMIN_TOKEN, '-y'],
      { cwd: work, env, timeoutMs: 60_000 },
    );
    expect(added.code, added.output).toBe(0);
  });
  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  it('applies a task attached: waits, attaches through the SSH proxy, prints its output and exit', async () => {
    writeFileSync(
      join(work, 'task.dstack.yml'),
      [
        'type: task',
        'name: reference-hello',
        'commands:',
        '  - echo "hello from dstack\'s own CLI"',
        '  - echo second line',
        '',
      ].join('\n'),
    );
    const applied = await runReferenceCli(cli, ['apply', '-f', 'task.dstack.yml', '-y'], {
      cwd: work,
      env,
      timeoutMs: 90_000,
    });
    expect(applied.code, applied.output).toBe(0);
    expect(applied.output).toContain("hello from dstack's own CLI\nsecond line");
    expect(applied.output).toContain('Exited (0)');
    const ps = await runReferenceCli(cli, ['ps', '-a'], { cwd: work, env, timeoutMs: 60_000 });
    expect(ps.output).toMatch(/reference-hello .* exited \(0\)/);
  });

  it("lists projects through dstack's Python API", async () => {
    const listed = await runReferencePython(
      cli,
      'from dstack.api import Client\nprint([p.project_name for p in Client.from_config().client.projects.list()])',
      { cwd: work, env, timeoutMs: 60_000 },
    );
    expect(listed.code, listed.output).toBe(0);
    expect(listed.output).toContain("['main']");
  });
});
