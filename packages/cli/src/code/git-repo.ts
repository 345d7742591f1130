/**
 * A local Git repo as dstack's `RemoteRepo.from_dir` reads it: the remote's URL, the tracking
 * branch and its commit, the committer identity, and the diff of the working tree against that
 * commit (tracked changes and untracked files that are not ignored), binary-safe.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { CommandError } from '../output/command-error.js';

const execFileAsync = promisify(execFile);

/** The largest diff read (the upload limit refuses far less); past it the CLI stops reading. */
const MAX_DIFF_BYTES = 1024 * 1024 * 1024;

export interface GitRepoState {
  /** The top of the working tree. */
  root: string;
  remoteUrl: string;
  /** The remote branch the current branch tracks, e.g. `main`. */
  branch: string;
  /** The tracking branch's commit: the runner clones this. */
  hash: string;
  configName: string | null;
  configEmail: string | null;
}

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

async function gitOrNull(cwd: string, args: string[]): Promise<string | null> {
  try {
    const output = await git(cwd, args);
    return output === '' ? null : output;
  } catch {
    return null;
  }
}

/** The top of the Git working tree `directory` is in, or null when it is in none. */
export async function gitWorkTreeRoot(directory: string): Promise<string | null> {
  if ((await gitOrNull(directory, ['rev-parse', '--is-inside-work-tree'])) !== 'true') return null;
  return gitOrNull(directory, ['rev-parse', '--show-toplevel']);
}

/** Reads the repo's remote state; a clear error when HEAD is detached or nothing is tracked. */
export async function readGitRepo(root: string): Promise<GitRepoState> {
  const head = await gitOrNull(root, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  if (head === null) throw new CommandError(`Git repo in 'detached HEAD' state: ${root}\nCheck out a branch`);
  const remote = await gitOrNull(root, ['config', `branch.${head}.remote`]);
  const merge = await gitOrNull(root, ['config', `branch.${head}.merge`]);
  if (remote === null || merge === null || remote === '.') {
    throw new CommandError(
      `No remote branch is configured for branch ${head} of ${root}: push it with \`git push -u <remote> ${head}\``,
    );
  }
  const remoteUrl = await gitOrNull(root, ['remote', 'get-url', remote]);
  if (remoteUrl === null) throw new CommandError(`Git remote ${remote} of ${root} has no URL`);
  const branch = merge.replace(/^refs\/heads\//, '');
  const hash = await gitOrNull(root, [
    'rev-parse',
    '--verify',
    '--quiet',
    `refs/remotes/${remote}/${branch}^{commit}`,
  ]);
  if (hash === null) {
    throw new CommandError(
      `The remote branch ${remote}/${branch} of ${root} is not fetched: run \`git fetch ${remote}\``,
    );
  }
  return {
    root,
    remoteUrl,
    branch,
    hash,
    configName: await gitOrNull(root, ['config', 'user.name']),
    configEmail: await gitOrNull(root, ['config', 'user.email']),
  };
}

/** Runs git and collects its stdout as bytes; `okCodes` are the exit statuses that are not failures. */
function gitBytes(cwd: string, args: string[], okCodes: readonly number[] = [0]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_DIFF_BYTES) {
        child.kill();
        reject(new CommandError(`the diff of ${cwd} is larger than ${MAX_DIFF_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString();
    });
    child.once('error', (error) => reject(new CommandError(`git could not start: ${error.message}`)));
    child.once('close', (code) => {
      if (code !== null && okCodes.includes(code)) resolve(Buffer.concat(chunks));
      else reject(new CommandError(`git ${args.join(' ')} failed in ${cwd}: ${stderr.trim()}`));
    });
  });
}

/**
 * The working tree's changes against `hash` as one binary patch that `git apply` takes on a clone
 * at `hash`: `git diff <hash>` for tracked files, then each untracked, not ignored file as new.
 */
export async function workingTreeDiff(root: string, hash: string): Promise<Uint8Array> {
  const tracked = await gitBytes(root, [
    '-c',
    'core.quotepath=off',
    'diff',
    '--binary',
    '--no-ext-diff',
    hash,
    '--',
  ]);
  const listed = await gitBytes(root, ['ls-files', '--others', '--exclude-standard', '-z']);
  const untracked = listed
    .toString('utf8')
    .split('\0')
    .filter((path) => path !== '')
    .sort();
  const parts: Buffer[] = [tracked];
  for (const path of untracked) {
    // `--no-index` exits 1 when the files differ, which they always do here.
    parts.push(
      await gitBytes(
        root,
        ['diff', '--binary', '--no-ext-diff', '--no-index', '--', '/dev/null', path],
        [0, 1],
      ),
    );
  }
  return new Uint8Array(Buffer.concat(parts));
}
