/**
 * The code of a run `dstack apply` sends: `repos[0]` packed (a diff or an archive) and each
 * `files:` entry archived, all checked against `DSTACK_CLI_CODE_UPLOAD_LIMIT` before anything is
 * sent; then the archives uploaded with the plan and the repo (`repos/init`, `repos/upload_code`)
 * before the apply.
 */
import type { FileArchiveMapping, RemoteRepoCreds, RunConfiguration, RunSpec } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import {
  cliCodeUploadLimit,
  configurationDirOf,
  type PackedBlob,
  type PackedRepo,
  packFile,
  packRepo,
} from '../code/pack-code.js';
import { type RepoCredsOptions, resolveRepoCreds } from '../code/repo-creds.js';
import { CommandError } from '../output/command-error.js';

export interface RunCode {
  repo: PackedRepo | null;
  /** Creds from `--token` or `--git-identity`: `repos/init` stores them over what the user had. */
  givenCreds: RemoteRepoCreds | null;
  /** Where the repo goes in the job (`repos[0].path`). */
  repoDir: string | null;
  files: Array<{ path: string; archive: PackedBlob }>;
}

export async function packRunCode(
  configuration: RunConfiguration,
  configurationPath: string,
  credsOptions: RepoCredsOptions = {},
): Promise<RunCode> {
  const configurationDir = configurationDirOf(configurationPath);
  const limit = cliCodeUploadLimit();
  const repoSpec = configuration.repos[0];
  const repo = repoSpec ? await packRepo(repoSpec, configurationDir, limit) : null;
  const givenCreds = await givenRepoCreds(repo, credsOptions);
  const files: RunCode['files'] = [];
  for (const file of configuration.files) {
    files.push({ path: file.path, archive: await packFile(file.local_path, configurationDir, limit) });
  }
  return { repo, givenCreds, repoDir: repoSpec?.path ?? null, files };
}

/** `--token` or `--git-identity` of `apply`, as `dstack init` takes them: checked before the plan. */
async function givenRepoCreds(
  repo: PackedRepo | null,
  options: RepoCredsOptions,
): Promise<RemoteRepoCreds | null> {
  if (options.token === undefined && options.gitIdentity === undefined) return null;
  const option = options.token !== undefined ? '--token' : '--git-identity';
  if (!repo?.remote) throw new CommandError(`${option}: the configuration's repos[0] is not a Git repo`);
  return resolveRepoCreds(repo.remote.url, repo.remote.directory, options);
}

/** The run spec's repo fields (dstack's `repo_id`, `repo_data`, `repo_code_hash`, `repo_dir`). */
export function runSpecCodeFields(code: RunCode): Partial<RunSpec> {
  if (!code.repo) return {};
  return {
    repo_id: code.repo.repoId,
    repo_data: code.repo.repoData,
    repo_code_hash: code.repo.code?.hash ?? null,
    repo_dir: code.repoDir,
  };
}

export async function uploadFileArchives(
  client: DstackApiClient,
  code: RunCode,
): Promise<FileArchiveMapping[]> {
  const mappings: FileArchiveMapping[] = [];
  for (const file of code.files) {
    const archive = await client.uploadArchive(file.archive.hash, file.archive.bytes);
    mappings.push({ id: archive.id, path: file.path });
  }
  return mappings;
}

/**
 * Records the repo and uploads its code. Creds given to `apply` are stored; else creds the user
 * already has for the repo (`dstack init`, or an earlier apply) are kept, as dstack's apply keeps
 * them: only a repo new to the user is initialized, with its public clone URL.
 */
export async function uploadRepoCode(client: DstackApiClient, code: RunCode): Promise<void> {
  const repo = code.repo;
  if (!repo) return;
  if (code.givenCreds) {
    await client.initRepo({ repo_id: repo.repoId, repo_info: repo.repoInfo, repo_creds: code.givenCreds });
  } else if (!(await client.getRepoWithCreds(repo.repoId))?.repo_creds) {
    await client.initRepo({ repo_id: repo.repoId, repo_info: repo.repoInfo, repo_creds: repo.repoCreds });
  }
  if (repo.code) await client.uploadCode(repo.repoId, repo.code.hash, repo.code.bytes);
}
