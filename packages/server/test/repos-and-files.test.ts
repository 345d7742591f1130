/**
 * End to end on the local backend with the real `dstack` CLI: a task applied from inside a Git
 * repo (its remote a bare repo on this machine) runs on the remote's commit with the working
 * tree's uncommitted and untracked changes; a `files:` entry is at its path; the same code is
 * stored once; code over the limit is refused by the CLI before anything is sent, and by the
 * server when only the server's limit is low; a files: entry that unpacks past the server's cap
 * fails its job, naming the cap's setting.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CODE_UPLOAD_LIMIT_BYTES, type Run } from '@dstack/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

import { type CliResult, killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

/** The CLI's built bin (the workspace builds it before the tests run). */

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();

describeEachDatabase('repos and files through dstack apply', (databaseUrl) => {
  const temp = makeTempDir();
  const home = join(temp.dir, 'home');
  const work = join(temp.dir, 'work');
  let harness: HarnessServer;

  /** Runs `dstack …` in the working tree, as its user would. */
  const dstack = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runDstack(args, { cwd: work, env: { HOME: home, ...env } });

  const countRows = async (table: 'codes' | 'file_archives' | 'runs') =>
    (await harness.server.app.db.selectFrom(table).select('id').execute()).length;

  beforeAll(async () => {
    requireBuiltDstack();
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    mkdirSync(join(home, '.dstack'), { recursive: true });
    writeFileSync(
      join(home, '.dstack', 'config.yml'),
      `projects:\n  - {name: main, url: '${harness.server.url}', token: ${ADMIN_TOKEN}, default: true}\n`,
    );
    // The remote: a bare repo on this machine, with one commit on main.
    const bare = join(temp.dir, 'origin.git');
    git(temp.dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    git(temp.dir, 'clone', '--quiet', bare, work);
    writeFileSync(join(work, 'tracked.txt'), 'committed content\n');
    writeFileSync(join(work, '.gitignore'), 'ignored.txt\n');
    git(work, 'add', '.');
    git(work, 'commit', '--quiet', '-m', 'first');
    git(work, 'push', '--quiet', '-u', 'origin', 'main');
    // The working tree the user applies from: changes not committed, a file not tracked, one ignored.
    writeFileSync(join(work, 'tracked.txt'), 'uncommitted content\n');
    writeFileSync(join(work, 'untracked.txt'), 'untracked content\n');
    writeFileSync(join(work, 'ignored.txt'), 'ignored content\n');
    mkdirSync(join(temp.dir, 'shared'));
    writeFileSync(join(temp.dir, 'shared', 'input.txt'), 'files entry content\n');
    const resources = Object.entries(HOST_RESOURCES)
      .map(([name, value]) => `  ${name}: '${value}'`)
      .join('\n');
    writeFileSync(
      join(work, '.dstack.yml'),
      [
        'type: task',
        'repos: ["."]',
        'files:',
        '  - ../shared:inputs/shared',
        'commands:',
        '  - cat tracked.txt',
        '  - cat untracked.txt',
        '  - test ! -e ignored.txt && echo ignored file absent',
        '  - cat inputs/shared/input.txt',
        '  - git rev-parse --abbrev-ref HEAD',
        'resources:',
        resources,
        '',
      ].join('\n'),
    );
  });

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  it("runs on the remote's commit with the uncommitted change, the untracked file and the files: entry", async () => {
    const result = await dstack(['apply', '-f', '.dstack.yml', '-y', '-n', 'code-first']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'uncommitted content\nuntracked content\nignored file absent\nfiles entry content\nmain\n',
    );
    const run = await harness.waitForRun('code-first', ['done']);
    expect(run.run_spec).toMatchObject({
      repo_data: { repo_type: 'remote', repo_name: 'origin', repo_branch: 'main' },
      repo_dir: '.',
    });
    expect(await countRows('codes')).toBe(1);
    expect(await countRows('file_archives')).toBe(1);
  });

  it('stores the same code and files once when applied again', async () => {
    const result = await dstack(['apply', '-f', '.dstack.yml', '-y', '-n', 'code-second']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('uncommitted content\n');
    const runs = await harness.call<Run[]>('/api/runs/list', { project_name: 'main' });
    expect(runs.body.map((run) => run.run_spec.repo_code_hash)).toEqual([
      runs.body[0]?.run_spec.repo_code_hash,
      runs.body[0]?.run_spec.repo_code_hash,
    ]);
    expect(await countRows('codes')).toBe(1);
    expect(await countRows('file_archives')).toBe(1);
  });

  it('is refused by the server over DSTACK_SERVER_CODE_UPLOAD_LIMIT, naming it', async () => {
    const settings = harness.server.app.settings;
    settings.code.uploadLimitBytes = 100;
    try {
      writeFileSync(join(work, 'untracked.txt'), `${'changed '.repeat(40)}\n`);
      const result = await dstack(['apply', '-f', '.dstack.yml', '-y', '-n', 'code-server-limit'], {
        DSTACK_CLI_CODE_UPLOAD_LIMIT: '0',
      });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/exceeds the limit of 100B.*DSTACK_SERVER_CODE_UPLOAD_LIMIT/);
    } finally {
      settings.code.uploadLimitBytes = DEFAULT_CODE_UPLOAD_LIMIT_BYTES;
    }
    expect(await countRows('codes')).toBe(1);
    const runs = await harness.call<Run[]>('/api/runs/list', { project_name: 'main' });
    expect(runs.body.map((run) => run.run_spec.run_name)).not.toContain('code-server-limit');
  });

  it('fails the job when a files: entry unpacks to more than DSTACK_SERVER_CODE_UNPACKED_LIMIT, naming it', async () => {
    // 8 MiB of zeros: a files: archive of a few KiB, under every upload limit.
    mkdirSync(join(temp.dir, 'bomb'));
    writeFileSync(join(temp.dir, 'bomb', 'zeros.bin'), Buffer.alloc(8 * 1024 * 1024));
    writeFileSync(
      join(work, 'bomb.dstack.yml'),
      [
        'type: task',
        'files:',
        '  - ../bomb:inputs/bomb',
        'commands:',
        '  - echo the job ran',
        'resources:',
        ...Object.entries(HOST_RESOURCES).map(([name, value]) => `  ${name}: '${value}'`),
        '',
      ].join('\n'),
    );
    const settings = harness.server.app.settings;
    settings.code.unpackedLimitBytes = 1024 * 1024;
    try {
      await dstack(['apply', '-f', 'bomb.dstack.yml', '-y', '-n', 'code-unpacked-limit']);
    } finally {
      settings.code.unpackedLimitBytes = null;
    }
    const run = await harness.waitForRun('code-unpacked-limit', ['failed']);
    const submission = run.latest_job_submission;
    expect(submission?.termination_reason).toBe('executor_error');
    expect(submission?.termination_reason_message).toContain(
      'The files entry for inputs/bomb unpacks to more than 1.0MB (1048576 bytes)',
    );
    expect(submission?.termination_reason_message).toContain('DSTACK_SERVER_CODE_UNPACKED_LIMIT');
  });

  it('refuses a working tree over DSTACK_CLI_CODE_UPLOAD_LIMIT before sending anything, naming the limit', async () => {
    writeFileSync(join(work, 'large.txt'), 'x'.repeat(5000));
    const runsBefore = await countRows('runs');
    const archivesBefore = await countRows('file_archives');
    const result = await dstack(['apply', '-f', '.dstack.yml', '-y', '-n', 'code-too-large'], {
      DSTACK_CLI_CODE_UPLOAD_LIMIT: '1000',
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Repo diff size is [\d.]+KB, which exceeds the limit of 1000B\./);
    expect(result.stderr).toContain('DSTACK_CLI_CODE_UPLOAD_LIMIT');
    // Not even the plan was asked for: nothing reached the server.
    expect(result.stdout).toBe('');
    expect(await countRows('runs')).toBe(runsBefore);
    expect(await countRows('codes')).toBe(1);
    expect(await countRows('file_archives')).toBe(archivesBefore);
  });
});
