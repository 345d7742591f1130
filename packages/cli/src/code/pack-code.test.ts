import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliCodeUploadLimit, cloneUrlOf, localPathOf, packFile, packRepo, slugify } from './pack-code.js';

let scratch: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();

/** The names in a gzipped tar, as `tar -tzf` lists them. */
function listArchive(bytes: Uint8Array): string[] {
  const path = join(scratch, `listed-${Math.random()}.tar.gz`);
  writeFileSync(path, bytes);
  return execFileSync('tar', ['-tzf', path]).toString().split('\n').filter(Boolean).sort();
}

const repoSpec = (fields: Record<string, string> = {}) => ({
  path: '.',
  if_exists: 'error' as const,
  ...fields,
});

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'dstack-pack-'));
});
afterEach(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('packing a directory that is not a Git repo', () => {
  it('archives it honouring .gitignore and .dstackignore at every level, .git never, reproducibly', async () => {
    const dir = join(scratch, 'project');
    mkdirSync(join(dir, 'src', 'cache'), { recursive: true });
    mkdirSync(join(dir, 'data'));
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, '.git', 'config'), '');
    writeFileSync(join(dir, '.gitignore'), '*.log\ndata/\n');
    writeFileSync(join(dir, '.dstackignore'), 'secret.txt\n');
    writeFileSync(join(dir, 'src', '.gitignore'), 'cache/\n!keep.log\n');
    writeFileSync(join(dir, 'main.py'), 'print(1)\n');
    writeFileSync(join(dir, '.env.example'), 'A=1\n');
    writeFileSync(join(dir, 'run.log'), 'x');
    writeFileSync(join(dir, 'secret.txt'), 'x');
    writeFileSync(join(dir, 'data', 'big.bin'), 'x');
    writeFileSync(join(dir, 'src', 'keep.log'), 'kept');
    writeFileSync(join(dir, 'src', 'cache', 'c.bin'), 'x');
    symlinkSync('main.py', join(dir, 'link.py'));
    const packed = await packRepo(repoSpec({ local_path: 'project' }), scratch, 0);
    expect(packed.repoData).toEqual({ repo_type: 'local', repo_dir: dir });
    expect(packed.repoId).toBe(slugify('project', dir));
    expect(listArchive(packed.code?.bytes ?? new Uint8Array())).toEqual([
      '.dstackignore',
      '.env.example',
      '.gitignore',
      'link.py',
      'main.py',
      'src/',
      'src/.gitignore',
      'src/keep.log',
    ]);
    const again = await packRepo(repoSpec({ local_path: 'project' }), scratch, 0);
    expect(again.code?.hash).toBe(packed.code?.hash);
  });

  it('archives a files: entry under its own name, and refuses a missing one naming it', async () => {
    mkdirSync(join(scratch, 'inputs', 'nested'), { recursive: true });
    writeFileSync(join(scratch, 'inputs', 'nested', 'a.txt'), 'a');
    const archive = await packFile('inputs', scratch, 0);
    expect(listArchive(archive.bytes)).toEqual(['inputs/', 'inputs/nested/', 'inputs/nested/a.txt']);
    await expect(packFile('missing.txt', scratch, 0)).rejects.toThrow(/files: missing\.txt does not exist/);
  });
});

describe('packing symbolic links', () => {
  it('keeps links inside, packs a link to a file outside as the file, and refuses one that leads out, naming it', async () => {
    const dir = join(scratch, 'project');
    const outside = join(scratch, 'outside');
    mkdirSync(join(dir, 'src'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(dir, 'src', 'main.py'), 'print(1)\n');
    writeFileSync(join(outside, 'shared.txt'), 'shared\n');
    symlinkSync('src', join(dir, 'code'));
    symlinkSync(join(dir, 'src', 'main.py'), join(dir, 'absolute-inside.py'));
    symlinkSync(join(outside, 'shared.txt'), join(dir, 'shared.txt'));
    symlinkSync('../../project/src/main.py', join(dir, 'src', 'round-trip.py'));
    const packed = await packRepo(repoSpec({ local_path: 'project' }), scratch, 0);
    const listed = join(scratch, 'listed');
    mkdirSync(listed);
    writeFileSync(join(listed, 'code.tar.gz'), packed.code?.bytes ?? new Uint8Array());
    const verbose = execFileSync('tar', ['-tvzf', join(listed, 'code.tar.gz')]).toString();
    expect(verbose).toContain('code -> src');
    expect(verbose).toContain('absolute-inside.py -> src/main.py');
    expect(verbose).toMatch(/^-.* shared\.txt$/m);
    expect(verbose).toContain('src/round-trip.py -> main.py');

    symlinkSync(outside, join(dir, 'data'));
    await expect(packRepo(repoSpec({ local_path: 'project' }), scratch, 0)).rejects.toThrow(
      `${join(dir, 'data')} is a symbolic link to ${outside}, outside ${dir}: the job's runner refuses links that lead out`,
    );
    symlinkSync('../../missing', join(dir, 'src', 'dangling'));
    writeFileSync(join(dir, '.dstackignore'), 'data\n');
    await expect(packRepo(repoSpec({ local_path: 'project' }), scratch, 0)).rejects.toThrow(
      `${join(dir, 'src', 'dangling')} is a symbolic link to ../../missing`,
    );
  });

  it('packs what a files: entry that is a link names', async () => {
    mkdirSync(join(scratch, 'real', 'nested'), { recursive: true });
    writeFileSync(join(scratch, 'real', 'nested', 'a.txt'), 'a');
    writeFileSync(join(scratch, 'real.txt'), 'b');
    symlinkSync('real', join(scratch, 'inputs'));
    symlinkSync('real.txt', join(scratch, 'input.txt'));
    expect(listArchive((await packFile('inputs', scratch, 0)).bytes)).toEqual([
      'inputs/',
      'inputs/nested/',
      'inputs/nested/a.txt',
    ]);
    const single = join(scratch, 'single');
    mkdirSync(single);
    writeFileSync(join(single, 'input.tar.gz'), (await packFile('input.txt', scratch, 0)).bytes);
    expect(execFileSync('tar', ['-tvzf', join(single, 'input.tar.gz')]).toString()).toMatch(
      /^-.* input\.txt$/m,
    );
  });
});

describe('packing a Git repo', () => {
  function cloneWithRemote(): { work: string; bare: string; hash: string } {
    const bare = join(scratch, 'origin.git');
    const work = join(scratch, 'work');
    git(scratch, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    git(scratch, 'clone', '--quiet', bare, work);
    writeFileSync(join(work, 'tracked.txt'), 'committed\n');
    writeFileSync(join(work, '.gitignore'), 'ignored.txt\n');
    writeFileSync(join(work, 'binary.bin'), Buffer.from([0, 1, 2, 3]));
    git(work, 'add', '.');
    git(work, 'commit', '--quiet', '-m', 'first');
    git(work, 'push', '--quiet', '-u', 'origin', 'main');
    return { work, bare, hash: git(work, 'rev-parse', 'HEAD').trim() };
  }

  it("sends the diff of uncommitted and untracked changes against the remote's commit, which applies on a clone", async () => {
    const { work, bare, hash } = cloneWithRemote();
    // A local commit not pushed is part of the diff too: the runner clones the remote's commit.
    writeFileSync(join(work, 'committed-locally.txt'), 'local commit\n');
    git(work, 'add', '.');
    git(work, 'commit', '--quiet', '-m', 'local');
    writeFileSync(join(work, 'tracked.txt'), 'uncommitted change\n');
    writeFileSync(join(work, 'binary.bin'), Buffer.from([9, 8, 7, 0]));
    writeFileSync(join(work, 'untracked.txt'), 'untracked\n');
    writeFileSync(join(work, 'ignored.txt'), 'must not travel\n');
    const packed = await packRepo(repoSpec({ local_path: 'work' }), scratch, 0);
    expect(packed.repoData).toMatchObject({
      repo_type: 'remote',
      repo_name: 'origin',
      repo_branch: 'main',
      repo_hash: hash,
    });
    expect(packed.repoCreds).toEqual({ clone_url: `file://${bare}` });
    const diff = Buffer.from(packed.code?.bytes ?? new Uint8Array()).toString('latin1');
    expect(diff).not.toContain('must not travel');
    // What the runner does: clone the remote at the hash, apply the diff.
    const clone = join(scratch, 'clone');
    git(scratch, 'clone', '--quiet', bare, clone);
    git(clone, 'reset', '--quiet', '--hard', hash);
    writeFileSync(join(scratch, 'code.diff'), packed.code?.bytes ?? new Uint8Array());
    git(clone, 'apply', join(scratch, 'code.diff'));
    const show = (path: string) => execFileSync('cat', [join(clone, path)]).toString();
    expect(show('tracked.txt')).toBe('uncommitted change\n');
    expect(show('untracked.txt')).toBe('untracked\n');
    expect(show('committed-locally.txt')).toBe('local commit\n');
    expect([...execFileSync('cat', [join(clone, 'binary.bin')])]).toEqual([9, 8, 7, 0]);
  });

  it('has no code to upload for a clean working tree', async () => {
    cloneWithRemote();
    const packed = await packRepo(repoSpec({ local_path: 'work' }), scratch, 0);
    expect(packed.code).toBeNull();
  });

  it('refuses a diff over the limit before anything is sent, naming the limit and the variable', async () => {
    const { work } = cloneWithRemote();
    writeFileSync(join(work, 'large.txt'), 'x'.repeat(5000));
    await expect(packRepo(repoSpec({ local_path: 'work' }), scratch, 1000)).rejects.toThrow(
      /Repo diff size is [\d.]+KB, which exceeds the limit of 1000B\..*DSTACK_CLI_CODE_UPLOAD_LIMIT/,
    );
  });

  it('refuses a branch without a remote branch, naming it', async () => {
    const work = join(scratch, 'lonely');
    mkdirSync(work);
    git(work, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(join(work, 'a'), 'a');
    git(work, 'add', '.');
    git(work, 'commit', '--quiet', '-m', 'a');
    await expect(packRepo(repoSpec({ local_path: 'lonely' }), scratch, 0)).rejects.toThrow(
      /No remote branch is configured for branch main/,
    );
  });
});

describe('a repo by URL', () => {
  it('has the branch and hash of the spec, the URL as clone URL, and no code', async () => {
    const packed = await packRepo(
      repoSpec({ url: 'https://github.com/dstackai/dstack-examples.git', branch: 'main', hash: 'abc123' }),
      scratch,
      0,
    );
    expect(packed).toEqual({
      repoId: slugify('dstack-examples', 'github.com/dstackai/dstack-examples'),
      repoInfo: { repo_type: 'remote', repo_name: 'dstack-examples' },
      repoData: {
        repo_type: 'remote',
        repo_name: 'dstack-examples',
        repo_branch: 'main',
        repo_hash: 'abc123',
      },
      repoCreds: { clone_url: 'https://github.com/dstackai/dstack-examples.git' },
      remote: { url: 'https://github.com/dstackai/dstack-examples.git', directory: scratch },
      code: null,
    });
  });

  it('clones SSH remotes over HTTPS and local paths as file:// URLs', () => {
    expect(cloneUrlOf('git@github.com:org/repo.git', '/r')).toBe('https://github.com/org/repo.git');
    expect(cloneUrlOf('ssh://git@github.com/org/repo.git', '/r')).toBe('https://github.com/org/repo.git');
    expect(cloneUrlOf('https://example.com/org/repo', '/r')).toBe('https://example.com/org/repo');
    expect(cloneUrlOf('../origin.git', '/src/work')).toBe('file:///src/origin.git');
  });
});

describe('local paths of the configuration', () => {
  it("start at the configuration file's directory, ~ at the home", () => {
    expect(localPathOf('data', '/work/project')).toBe('/work/project/data');
    expect(localPathOf('/abs/data', '/work/project')).toBe('/abs/data');
    expect(localPathOf('~/data', '/work/project')).toBe(join(homedir(), 'data'));
  });
});

describe('the CLI upload limit', () => {
  it('is 2 MiB unless DSTACK_CLI_CODE_UPLOAD_LIMIT says otherwise, and names the variable when bad', () => {
    expect(cliCodeUploadLimit({})).toBe(2 * 1024 * 1024);
    expect(cliCodeUploadLimit({ DSTACK_CLI_CODE_UPLOAD_LIMIT: '0' })).toBe(0);
    expect(() => cliCodeUploadLimit({ DSTACK_CLI_CODE_UPLOAD_LIMIT: '2MB' })).toThrow(
      /DSTACK_CLI_CODE_UPLOAD_LIMIT/,
    );
  });
});
