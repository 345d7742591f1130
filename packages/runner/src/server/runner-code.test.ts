import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { decodeLogs, pullUntil, submitBody } from '../testing/runner-job.test.helpers.js';
import { type RunnerServer, startRunner } from './runner-server.js';

let scratch: string;
let runner: RunnerServer | undefined;
let client: RunnerClient;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();

beforeEach(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'dstack-runner-code-'));
  runner = await startRunner({ port: 0, homeDir: join(scratch, 'home') });
  client = new RunnerClient(runner.url);
});

afterEach(async () => {
  await runner?.close();
  runner = undefined;
  rmSync(scratch, { recursive: true, force: true });
});

/** A bare repo with one commit of `tracked.txt` on `main`; returns its URL and the commit. */
function bareRepo(): { url: string; hash: string } {
  const bare = join(scratch, 'origin.git');
  const work = join(scratch, 'work');
  git(scratch, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  git(scratch, 'clone', '--quiet', bare, work);
  writeFileSync(join(work, 'tracked.txt'), 'committed\n');
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', 'first');
  git(work, 'push', '--quiet', 'origin', 'HEAD:main');
  return { url: `file://${bare}`, hash: git(work, 'rev-parse', 'HEAD').trim() };
}

describe('runner code setup', () => {
  it('clones the remote at its commit, applies the uploaded diff and unpacks file archives at their paths', async () => {
    const { url, hash } = bareRepo();
    const diff = [
      'diff --git a/tracked.txt b/tracked.txt',
      '--- a/tracked.txt',
      '+++ b/tracked.txt',
      '@@ -1 +1 @@',
      '-committed',
      '+uncommitted change',
      '',
    ].join('\n');
    const source = join(scratch, 'data');
    mkdirSync(source);
    writeFileSync(join(source, 'a.txt'), 'file archive\n');
    const archive = execFileSync('tar', ['-czf', '-', '-C', scratch, 'data']);
    await client.submit(
      submitBody(
        ['cat repo/tracked.txt', 'git -C repo rev-parse HEAD', 'cat inputs/data/a.txt'],
        {
          repo_data: { repo_type: 'remote', repo_name: 'origin', repo_branch: 'main', repo_hash: hash },
          repo_dir: 'repo',
          repo_exists_action: 'error',
          file_archives: [{ id: 'archive-1', path: 'inputs/data' }],
        },
        { repo_credentials: { clone_url: url } },
      ),
    );
    await client.uploadArchive('archive-1', new Uint8Array(archive));
    await client.uploadCode(new TextEncoder().encode(diff));
    await client.run();
    const job = await pullUntil(client);
    expect(job.states.at(-1)?.state).toBe('done');
    expect(decodeLogs(job.jobLogs)).toBe(`uncommitted change\n${hash}\nfile archive\n`);
  });

  it.each([
    [
      'a path that climbs out',
      [
        'diff --git a/../escape b/../escape',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/../escape',
        '@@ -0,0 +1 @@',
        '+pwned',
        '',
      ],
      "invalid path '../escape'",
    ],
    [
      'a file beyond a symbolic link the diff adds',
      [
        'diff --git a/out b/out',
        'new file mode 120000',
        '--- /dev/null',
        '+++ b/out',
        '@@ -0,0 +1 @@',
        '+../..',
        '\\ No newline at end of file',
        'diff --git a/out/escape b/out/escape',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/out/escape',
        '@@ -0,0 +1 @@',
        '+pwned',
        '',
      ],
      "affected file 'out/escape' is beyond a symbolic link",
    ],
  ])('fails the job when the uploaded diff writes %s (git apply refuses it)', async (_, diff, gitSays) => {
    const { url, hash } = bareRepo();
    await client.submit(
      submitBody(
        ['true'],
        {
          repo_data: { repo_type: 'remote', repo_name: 'origin', repo_branch: 'main', repo_hash: hash },
          repo_dir: 'repo',
          repo_exists_action: 'error',
        },
        { repo_credentials: { clone_url: url } },
      ),
    );
    await client.uploadCode(new TextEncoder().encode(diff.join('\n')));
    await client.run();
    const job = await pullUntil(client);
    expect(job.states.at(-1)).toMatchObject({ state: 'failed', termination_reason: 'executor_error' });
    expect(job.states.at(-1)?.termination_message).toContain(gitSays);
    expect(existsSync(join(scratch, 'home', 'workflow', 'escape'))).toBe(false);
    expect(existsSync(join(scratch, 'home', 'escape'))).toBe(false);
  });

  it('unpacks the archive of a directory that is not a Git repo at the repo dir', async () => {
    const source = join(scratch, 'plain');
    mkdirSync(join(source, 'src'), { recursive: true });
    writeFileSync(join(source, 'src', 'main.py'), 'print("hi")\n');
    const archive = execFileSync('tar', ['-czf', '-', '-C', source, '.']);
    await client.submit(
      submitBody(['cat code/src/main.py', 'echo "$DSTACK_REPO_DIR"'], {
        repo_data: { repo_type: 'local', repo_dir: source },
        repo_dir: 'code',
        repo_exists_action: 'error',
      }),
    );
    await client.uploadCode(new Uint8Array(archive));
    const started = await client.run();
    const job = await pullUntil(client);
    expect(job.states.at(-1)?.state).toBe('done');
    expect(decodeLogs(job.jobLogs)).toBe(`print("hi")\n${join(started.working_dir, 'code')}\n`);
  });

  it.each([
    ['the code', 'code'],
    ['a files entry', 'files'],
  ])(
    'fails the job when %s unpacks to more than code_unpacked_limit, naming the limit and its setting',
    async (_, which) => {
      // 8 MiB of zeros: an archive of a few KiB, far under the upload limit.
      const source = join(scratch, 'bomb');
      mkdirSync(source);
      writeFileSync(join(source, 'zeros.bin'), Buffer.alloc(8 * 1024 * 1024));
      const archive = new Uint8Array(execFileSync('tar', ['-czf', '-', '-C', scratch, 'bomb']));
      expect(archive.length).toBeLessThan(64 * 1024);
      const limit = 1024 * 1024;
      await client.submit(
        submitBody(
          ['echo the job ran'],
          which === 'code'
            ? {
                repo_data: { repo_type: 'local', repo_dir: source },
                repo_dir: 'code',
                repo_exists_action: 'error',
              }
            : { file_archives: [{ id: 'bomb-1', path: 'inputs/bomb' }] },
          { code_unpacked_limit: limit },
        ),
      );
      if (which === 'code') await client.uploadCode(archive);
      else await client.uploadArchive('bomb-1', archive);
      await client.run();
      const job = await pullUntil(client);
      expect(job.states.at(-1)).toMatchObject({ state: 'failed', termination_reason: 'executor_error' });
      const what = which === 'code' ? 'The code' : 'The files entry for inputs/bomb';
      expect(job.states.at(-1)?.termination_message).toBe(
        `${what} unpacks to more than 1.0MB (1048576 bytes), the limit of unpacked code. Exclude large` +
          " files with .gitignore/.dstackignore, or raise the limit with the server's" +
          ' DSTACK_SERVER_CODE_UNPACKED_LIMIT environment variable (bytes; 0: no limit).',
      );
      expect(decodeLogs(job.jobLogs)).toBe('');
    },
  );

  it('fails the job naming the repo dir when it is not empty and if_exists is error', async () => {
    const { url, hash } = bareRepo();
    const homeDir = join(scratch, 'home');
    mkdirSync(join(homeDir, 'workflow'), { recursive: true });
    writeFileSync(join(homeDir, 'workflow', 'left-over'), '');
    await client.submit(
      submitBody(
        ['true'],
        {
          repo_data: { repo_type: 'remote', repo_name: 'origin', repo_hash: hash },
          repo_exists_action: 'error',
        },
        { repo_credentials: { clone_url: url } },
      ),
    );
    await client.uploadCode(new Uint8Array());
    await client.run();
    const job = await pullUntil(client);
    expect(job.states.at(-1)).toMatchObject({ state: 'failed', termination_reason: 'executor_error' });
    expect(job.states.at(-1)?.termination_message).toContain('repo dir is not empty');
  });

  it('clones only the branch with single_branch, every branch without it', async () => {
    const { url, hash } = bareRepo();
    git(join(scratch, 'work'), 'push', '--quiet', 'origin', 'HEAD:other');
    const branches = async (singleBranch: boolean, repoDir: string) => {
      await client.submit(
        submitBody(
          [`git -C ${repoDir} for-each-ref --format='%(refname)' refs/remotes/origin/`],
          {
            repo_data: { repo_type: 'remote', repo_name: 'origin', repo_branch: 'main', repo_hash: hash },
            repo_dir: repoDir,
            repo_exists_action: 'error',
            single_branch: singleBranch,
          },
          { repo_credentials: { clone_url: url } },
        ),
      );
      await client.uploadCode(new Uint8Array());
      await client.run();
      const job = await pullUntil(client);
      expect(job.states.at(-1)?.state).toBe('done');
      return decodeLogs(job.jobLogs)
        .split('\n')
        .filter((ref) => ref !== '' && ref !== 'refs/remotes/origin/HEAD')
        .sort();
    };
    expect(await branches(true, 'single')).toEqual(['refs/remotes/origin/main']);
    await runner?.close();
    runner = await startRunner({ port: 0, homeDir: join(scratch, 'home') });
    client = new RunnerClient(runner.url);
    expect(await branches(false, 'all')).toEqual(['refs/remotes/origin/main', 'refs/remotes/origin/other']);
  });

  it('fails a clone without credentials naming the repo and dstack init, and never shows a password in the URL', async () => {
    const missing = `http://user:hunter2@127.0.0.1:9/private.git`;
    await client.submit(
      submitBody(
        ['true'],
        {
          repo_data: { repo_type: 'remote', repo_name: 'private', repo_branch: 'main' },
          repo_exists_action: 'error',
        },
        { repo_credentials: { clone_url: missing } },
      ),
    );
    await client.uploadCode(new Uint8Array());
    await client.run();
    const job = await pullUntil(client);
    const last = job.states.at(-1);
    expect(last).toMatchObject({ state: 'failed', termination_reason: 'executor_error' });
    expect(last?.termination_message).toContain(
      'cannot clone repo private (http://user@127.0.0.1:9/private.git)',
    );
    expect(last?.termination_message).toContain('run `dstack init` in the repo');
    expect(JSON.stringify(job)).not.toContain('hunter2');
  });
});
