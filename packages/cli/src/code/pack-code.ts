/**
 * What `dstack apply` uploads for a run's `repos:` and `files:`. A Git repo travels as the diff of
 * its working tree against the remote commit (the runner clones the remote and applies it); a
 * directory that is not a Git repo as a gzipped tar, as do `files:` entries (one archive each).
 * Everything is named by its sha256, and checked against the upload limit before it is sent.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import {
  codeUploadLimitMessage,
  DEFAULT_CODE_UPLOAD_LIMIT_BYTES,
  type RemoteRepoCreds,
  type RepoInfo,
  type RepoSpec,
  type RunRepoData,
} from '@dstack/core';
import { CommandError } from '../output/command-error.js';
import { gitWorkTreeRoot, readGitRepo, workingTreeDiff } from './git-repo.js';
import { walkForArchive } from './ignore-walk.js';
import { createTarGz } from './tar-archive.js';

/** The variable that sets the CLI's upload limit (bytes; 0: none), checked before anything is sent. */
export const CLI_CODE_UPLOAD_LIMIT_VARIABLE = 'DSTACK_CLI_CODE_UPLOAD_LIMIT';

/**
 * `DSTACK_CLI_CODE_UPLOAD_LIMIT`, default 2 MiB (the server's default `DSTACK_SERVER_CODE_UPLOAD_LIMIT`).
 * A bad value is an error naming the variable.
 */
export function cliCodeUploadLimit(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[CLI_CODE_UPLOAD_LIMIT_VARIABLE]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_CODE_UPLOAD_LIMIT_BYTES;
  if (!/^\d+$/.test(raw)) {
    throw new CommandError(`${CLI_CODE_UPLOAD_LIMIT_VARIABLE} must be a whole number of bytes, got "${raw}"`);
  }
  return Number(raw);
}

export interface PackedBlob {
  bytes: Uint8Array;
  /** sha256 hex of `bytes`. */
  hash: string;
}

export interface PackedRepo {
  repoId: string;
  repoInfo: RepoInfo;
  repoData: RunRepoData;
  /**
   * The clone URL of a Git repo, as a public repo's creds: sent by `repos/init` only when the user
   * has no creds for the repo yet (`dstack init` stores a private one's).
   */
  repoCreds: RemoteRepoCreds | null;
  /** A Git repo's remote URL and the directory its git config is read in (for `--token`, `--git-identity`). */
  remote: { url: string; directory: string } | null;
  /** The diff or archive; null when there is nothing to upload (a clean working tree, a URL). */
  code: PackedBlob | null;
}

function blob(bytes: Uint8Array): PackedBlob {
  return { bytes, hash: createHash('sha256').update(bytes).digest('hex') };
}

function checkLimit(what: string, bytes: Uint8Array, limit: number, source: string): void {
  if (limit > 0 && bytes.length > limit) {
    throw new CommandError(
      `${source}: ${codeUploadLimitMessage(what, bytes.length, limit, CLI_CODE_UPLOAD_LIMIT_VARIABLE)}`,
    );
  }
}

/** dstack's `slugify`: `<prefix>-<8 base36 digits of the key's sha256>`, so repo ids match dstack's. */
export function slugify(prefix: string, uniqueKey: string): string {
  const digest = createHash('sha256').update(uniqueKey).digest();
  let value = 0n;
  for (let index = digest.length - 1; index >= 0; index -= 1)
    value = (value << 8n) | BigInt(digest[index] as number);
  const digits: string[] = [];
  for (let count = 0; count < digest.length; count += 1) {
    digits.push((value % 36n).toString(36));
    value /= 36n;
  }
  return `${prefix}-${digits.reverse().join('').slice(0, 8)}`;
}

/**
 * A remote's URL as a runner can clone it without credentials: SSH (`git@host:org/repo.git`,
 * `ssh://…`) becomes HTTPS, as dstack clones a public repo; a local path becomes a `file://` URL.
 * A private repo's clone URL comes with its token or key from `dstack init` (`repo-creds.ts`).
 */
export function cloneUrlOf(remoteUrl: string, repoRoot: string): string {
  const scp = /^[^/@]+@([^/:]+):(.*)$/.exec(remoteUrl);
  if (scp && !remoteUrl.includes('://'))
    return `https://${scp[1] as string}/${(scp[2] as string).replace(/^\/+/, '')}`;
  if (/^ssh:\/\//i.test(remoteUrl) && URL.canParse(remoteUrl)) {
    const url = new URL(remoteUrl);
    return `https://${url.hostname}${url.pathname}`;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(remoteUrl)) return remoteUrl;
  return `file://${resolve(repoRoot, remoteUrl)}`;
}

/** The repo's name and a key unique to its location (dstack's `GitRepoURL`: host and clean path). */
function repoNameAndLocation(url: string): { name: string; location: string } {
  let host = '';
  let path = url;
  const scp = /^[^/]+@([^/:]+):(.*)$/.exec(url);
  if (scp) {
    host = (scp[1] as string).toLowerCase();
    path = `/${scp[2] as string}`;
  } else if (URL.canParse(url)) {
    const parsed = new URL(url);
    host = parsed.hostname.toLowerCase();
    path = decodeURIComponent(parsed.pathname);
  }
  const clean = path.replace(/\/+$/, '').replace(/\.git$/, '');
  return { name: clean.split('/').at(-1) || 'unknown', location: `${host}${clean}` };
}

/**
 * A Git remote's repo id (what `repos/init` and runs name it by) and name: the same for the SSH and
 * HTTPS URLs of one repo, so `dstack init` and `dstack apply` agree whichever the remote is.
 */
export function remoteRepoIdentity(url: string): { repoId: string; repoName: string } {
  const { name, location } = repoNameAndLocation(url);
  return { repoId: slugify(name, location), repoName: name };
}

/**
 * Packs `repos[0]`. `local_path` is relative to the configuration file's directory. `limit` in
 * bytes (0: none); over it the error names the limit and the variable, before anything is sent.
 */
export async function packRepo(spec: RepoSpec, configurationDir: string, limit: number): Promise<PackedRepo> {
  if (spec.url !== undefined) return remoteRepoByUrl(spec, spec.url, configurationDir);
  const localPath = localPathOf(spec.local_path ?? '.', configurationDir);
  const info = await stat(localPath).catch(() => null);
  if (!info?.isDirectory()) throw new CommandError(`repos[0].local_path: ${localPath} is not a directory`);
  const root = await gitWorkTreeRoot(localPath);
  if (root === null) return localDirectoryRepo(localPath, limit);
  const state = await readGitRepo(root);
  if (spec.branch !== undefined || spec.hash !== undefined) {
    throw new CommandError(
      'repos[0]: branch and hash go with url; a local repo runs at its tracking branch with its uncommitted changes',
    );
  }
  const cloneUrl = cloneUrlOf(state.remoteUrl, root);
  const { repoId, repoName: name } = remoteRepoIdentity(cloneUrl);
  const diff = await workingTreeDiff(root, state.hash);
  checkLimit('Repo diff', diff, limit, root);
  return {
    repoId,
    repoInfo: { repo_type: 'remote', repo_name: name },
    repoData: {
      repo_type: 'remote',
      repo_name: name,
      repo_branch: state.branch,
      repo_hash: state.hash,
      repo_config_name: state.configName,
      repo_config_email: state.configEmail,
    },
    repoCreds: { clone_url: cloneUrl },
    remote: { url: state.remoteUrl, directory: root },
    code: diff.length === 0 ? null : blob(diff),
  };
}

function remoteRepoByUrl(spec: RepoSpec, url: string, configurationDir: string): PackedRepo {
  const { repoId, repoName: name } = remoteRepoIdentity(url);
  return {
    repoId,
    repoInfo: { repo_type: 'remote', repo_name: name },
    repoData: {
      repo_type: 'remote',
      repo_name: name,
      repo_branch: spec.branch ?? null,
      repo_hash: spec.hash ?? null,
    },
    repoCreds: { clone_url: url },
    remote: { url, directory: configurationDir },
    code: null,
  };
}

async function localDirectoryRepo(directory: string, limit: number): Promise<PackedRepo> {
  const archive = await createTarGz(await walkForArchive(directory, ''));
  checkLimit('Archive', archive, limit, directory);
  return {
    repoId: slugify(basename(directory), directory),
    repoInfo: { repo_type: 'local', repo_dir: directory },
    repoData: { repo_type: 'local', repo_dir: directory },
    repoCreds: null,
    remote: null,
    code: blob(archive),
  };
}

/**
 * One `files:` entry as an archive whose one top-level entry is the file or directory (named as
 * it is locally; the runner puts it at the entry's path).
 */
export async function packFile(
  localPath: string,
  configurationDir: string,
  limit: number,
): Promise<PackedBlob> {
  const source = localPathOf(localPath, configurationDir);
  if (!(await stat(source).catch(() => null))) {
    throw new CommandError(`files: ${localPath} does not exist (${source})`);
  }
  const archive = await createTarGz(await walkForArchive(source, basename(source)));
  checkLimit('Archive', archive, limit, source);
  return blob(archive);
}

/** A `local_path` of the configuration: `~` is the user's home, a relative path starts at the file's directory. */
export function localPathOf(path: string, configurationDir: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(configurationDir, path);
}

/** The configuration file's directory: where relative `local_path`s start. */
export function configurationDirOf(configurationPath: string): string {
  return dirname(resolve(configurationPath));
}
