/**
 * End to end on the local backend with the real `dstack` CLI: a private repo served by a real
 * Git server on loopback. Over HTTP (`git http-backend` behind Basic auth that wants a token), a
 * run without credentials fails with the runner's message naming the repo and `dstack init`;
 * `dstack init` refuses missing or wrong credentials naming the option; with `--token`, or with
 * the token the local git credential helper gives, the job clones the repo, checks out its branch
 * only (`single_branch`) and applies the uncommitted change. Over SSH (a real sshd), `dstack init
 * --git-identity KEY` lets the job clone through `ssh://`. The token and the key are stored
 * encrypted and appear in no run, log or `dstack ps -v`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Run } from '@dstack/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { sshdUnavailableReason, startTestSshd, type TestSshd } from '../src/agents/__fixtures__/test-sshd.js';
import { generateAesKey } from '../src/security/encryption.js';
import { type CliResult, killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import { type GitHttpServer, startGitHttpServer } from './git-http-server.js';
import {
  ADMIN_TOKEN,
  describeOnDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

/** The CLI's built bin (the workspace builds it before the tests run). */

const GIT_TOKEN = 'e2e-git-token-5f1c';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();

// What is tested is git, the CLI and the runner, not the database: once, on SQLite.
describeOnDatabase('sqlite')('private repos through dstack init', (databaseUrl) => {
  const temp = makeTempDir('dstack-private-repos-');
  const home = join(temp.dir, 'home');
  const projectRoot = join(temp.dir, 'git');
  const bare = join(projectRoot, 'private.git');
  const httpWork = join(temp.dir, 'work-http');
  const sshWork = join(temp.dir, 'work-ssh');
  let harness: HarnessServer;
  let gitServer: GitHttpServer;
  let sshd: TestSshd | undefined;

  /** Runs `dstack …` in `cwd`. No global git config: the user's credential helper is only what a test sets in the repo. */
  const dstack = (cwd: string, args: string[]): Promise<CliResult> =>
    runDstack(args, { cwd, env: { HOME: home, GIT_CONFIG_NOSYSTEM: '1' } });

  /** A working tree cloned from the bare repo, its remote set to `remoteUrl`, with a change not committed. */
  function workingTree(directory: string, remoteUrl: string): void {
    git(temp.dir, 'clone', '--quiet', bare, directory);
    git(directory, 'remote', 'set-url', 'origin', remoteUrl);
    writeFileSync(join(directory, 'tracked.txt'), 'uncommitted content\n');
    const resources = Object.entries(HOST_RESOURCES)
      .map(([name, value]) => `  ${name}: '${value}'`)
      .join('\n');
    writeFileSync(
      join(directory, '.dstack.yml'),
      [
        'type: task',
        'repos: ["."]',
        'commands:',
        '  - cat tracked.txt',
        "  - git for-each-ref --format='%(refname)' refs/remotes/origin/ | grep -v HEAD",
        'resources:',
        resources,
        '',
      ].join('\n'),
    );
    // The configuration is not part of the code the job gets.
    writeFileSync(join(directory, '.git', 'info', 'exclude'), '.dstack.yml\n');
  }

  /** Everything the server shows about runs: the API's runs and `dstack ps -v`. */
  async function everythingShown(): Promise<string> {
    const runs = await harness.call<Run[]>('/api/runs/list', { project_name: 'main' });
    const ps = await dstack(httpWork, ['ps', '-a', '-v']);
    const logs = await Promise.all(runs.body.map((run) => harness.logs(run.run_spec.run_name ?? '')));
    return [JSON.stringify(runs.body), ps.stdout, ps.stderr, ...logs].join('\n');
  }

  beforeAll(async () => {
    requireBuiltDstack();
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: { ...localBackendConfig(temp.dir), encryption: { keys: [generateAesKey()] } },
    });
    mkdirSync(join(home, '.dstack'), { recursive: true });
    writeFileSync(
      join(home, '.dstack', 'config.yml'),
      `projects:\n  - {name: main, url: '${harness.server.url}', token: ${ADMIN_TOKEN}, default: true}\n`,
    );
    // The private repo: one commit on main, and a second branch the job must not fetch.
    mkdirSync(projectRoot);
    git(temp.dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    const seed = join(temp.dir, 'seed');
    git(temp.dir, 'clone', '--quiet', bare, seed);
    writeFileSync(join(seed, 'tracked.txt'), 'committed content\n');
    git(seed, 'add', '.');
    git(seed, 'commit', '--quiet', '-m', 'first');
    git(seed, 'push', '--quiet', 'origin', 'HEAD:main', 'HEAD:other');
    gitServer = await startGitHttpServer(projectRoot, GIT_TOKEN);
    workingTree(httpWork, `${gitServer.url}/private.git`);
  });

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    await gitServer?.close();
    await sshd?.stop();
    temp.remove();
  });

  it('fails the job without credentials, naming the repo and dstack init', async () => {
    const result = await dstack(httpWork, ['apply', '-f', '.dstack.yml', '-y', '-n', 'no-creds']);
    expect(result.code).not.toBe(0);
    const run = await harness.waitForRun('no-creds', ['failed']);
    const message = run.jobs[0]?.job_submissions.at(-1)?.termination_reason_message ?? '';
    expect(message).toContain(`cannot clone repo private (${gitServer.url}/private.git)`);
    expect(message).toContain('run `dstack init` in the repo');
    const ps = await dstack(httpWork, ['ps', '-a', '-v']);
    expect(ps.stdout).toContain('dstack init');
    expect(gitServer.refusals()).toBeGreaterThan(0);
  });

  it('dstack init refuses a repo it cannot reach, naming what to pass', async () => {
    const none = await dstack(httpWork, ['init']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain(`no credentials found for ${gitServer.url}/private.git`);
    expect(none.stderr).toContain('--token or --git-identity');

    const wrong = await dstack(httpWork, ['init', '--token', 'not-the-token']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain(`--token: cannot access ${gitServer.url}/private.git with the token`);
    expect(wrong.stderr).not.toContain('not-the-token');

    const missingKey = await dstack(httpWork, ['init', '--git-identity', join(temp.dir, 'no-such-key')]);
    expect(missingKey.code).not.toBe(0);
    expect(missingKey.stderr).toContain(
      `--git-identity: cannot read the SSH key ${join(temp.dir, 'no-such-key')}`,
    );
    const rows = await harness.server.app.db.selectFrom('repo_creds').select('creds').execute();
    // Only the public clone URL the first apply recorded.
    expect(rows).toHaveLength(1);
    expect(harness.server.app.encryption.decrypt(rows[0]?.creds ?? '')).not.toContain('oauth_token');
  });

  it('clones with the token of dstack init --token: the branch only, with the uncommitted change', async () => {
    const init = await dstack(httpWork, ['init', '--token', GIT_TOKEN]);
    expect(init.stderr).toBe('');
    expect(init).toMatchObject({ code: 0, stdout: 'OK\n' });
    const rows = await harness.server.app.db.selectFrom('repo_creds').select('creds').execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.creds).toMatch(/^enc:aes:/);
    expect(rows[0]?.creds).not.toContain(GIT_TOKEN);

    const result = await dstack(httpWork, ['apply', '-f', '.dstack.yml', '-y', '-n', 'with-token']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('uncommitted content\nrefs/remotes/origin/main\n');
    expect(result.stdout).not.toContain('origin/other');
    await harness.waitForRun('with-token', ['done']);
    expect(await everythingShown()).not.toContain(GIT_TOKEN);
  });

  it('clones with the token of the git credential helper when dstack init is given none', async () => {
    const store = join(temp.dir, 'git-credentials');
    writeFileSync(store, `${gitServer.url.replace('http://', `http://someone:${GIT_TOKEN}@`)}\n`, {
      mode: 0o600,
    });
    git(httpWork, 'config', 'credential.helper', `store --file=${store}`);
    // Start from no creds: delete the repo (and its creds) as a user would with a new project.
    const repos = await harness.server.app.db.selectFrom('repos').select('name').execute();
    await harness.call('/api/project/main/repos/delete', { repos_ids: repos.map((repo) => repo.name) });

    const init = await dstack(httpWork, ['init']);
    expect(init.stderr).toBe('');
    expect(init).toMatchObject({ code: 0, stdout: 'OK\n' });
    const result = await dstack(httpWork, ['apply', '-f', '.dstack.yml', '-y', '-n', 'with-helper']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('uncommitted content\n');
    expect(await everythingShown()).not.toContain(GIT_TOKEN);
  });

  it('dstack apply --token stores the token as dstack init does, and refuses a wrong one before the plan', async () => {
    const repos = await harness.server.app.db.selectFrom('repos').select('name').execute();
    await harness.call('/api/project/main/repos/delete', { repos_ids: repos.map((repo) => repo.name) });
    const runsBefore = (await harness.call<Run[]>('/api/runs/list', { project_name: 'main' })).body.length;

    const wrong = await dstack(httpWork, [
      'apply',
      '-f',
      '.dstack.yml',
      '-y',
      '-n',
      'apply-bad',
      '--token',
      'nope-1234',
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain(`--token: cannot access ${gitServer.url}/private.git with the token`);
    expect(wrong.stdout).toBe('');
    expect((await harness.call<Run[]>('/api/runs/list', { project_name: 'main' })).body).toHaveLength(
      runsBefore,
    );

    const result = await dstack(httpWork, [
      'apply',
      '-f',
      '.dstack.yml',
      '-y',
      '-n',
      'apply-token',
      '--token',
      GIT_TOKEN,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('uncommitted content\n');
    expect(await everythingShown()).not.toContain(GIT_TOKEN);
  });

  it.skipIf(sshdUnavailableReason() !== null)(
    'clones through SSH with the key of dstack init --git-identity',
    async () => {
      sshd = await startTestSshd();
      const keyFile = join(temp.dir, 'id_git');
      writeFileSync(keyFile, sshd.privateKey, { mode: 0o600 });
      workingTree(sshWork, `ssh://root@127.0.0.1:${sshd.port}${bare}`);

      const init = await dstack(sshWork, ['init', '--git-identity', keyFile]);
      expect(init.stderr).toBe('');
      expect(init).toMatchObject({ code: 0, stdout: 'OK\n' });
      const result = await dstack(sshWork, ['apply', '-f', '.dstack.yml', '-y', '-n', 'with-key']);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('uncommitted content\nrefs/remotes/origin/main\n');
      const shown = await everythingShown();
      expect(shown).not.toContain('PRIVATE KEY');
      const rows = await harness.server.app.db.selectFrom('repo_creds').select('creds').execute();
      expect(rows.map((row) => row.creds).join('\n')).not.toContain('PRIVATE KEY');
    },
  );
});
