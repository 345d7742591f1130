/**
 * The code of a run `dstack apply` sends: `repos[0]` packed (a diff or an archive) and each
 * `files:` entry archived, all checked against `DSTACK_CLI_CODE_UPLOAD_LIMIT` before anything is
 * sent; then the archives uploaded with the plan and the repo (`repos/init`, `repos/upload_code`)
 * before the apply.
 */
import type { FileArchiveMapping, RunConfiguration, RunSpec } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import {
  cliCodeUploadLimit,
  configurationDirOf,
  type PackedBlob,
  type PackedRepo,
  packFile,
  packRepo,
} from '../code/pack-code.js';

export interface RunCode {
  repo: PackedRepo | null;
  /** Where the repo goes in the job (`repos[0].path`). */
  repoDir: string | null;
  files: Array<{ path: string; archive: PackedBlob }>;
}

export async function packRunCode(
  configuration: RunConfiguration,
  configurationPath: string,
): Promise<RunCode> {
  const configurationDir = configurationDirOf(configurationPath);
  const limit = cliCodeUploadLimit();
  const repoSpec = configuration.repos[0];
  const repo = repoSpec ? await packRepo(repoSpec, configurationDir, limit) : null;
  const files: RunCode['files'] = [];
  for (const file of configuration.files) {
    files.push({ path: file.path, archive: await packFile(file.local_path, configurationDir, limit) });
  }
  return { repo, repoDir: repoSpec?.path ?? null, files };
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

export async function uploadRepoCode(client: DstackApiClient, code: RunCode): Promise<void> {
  const repo = code.repo;
  if (!repo) return;
  await client.initRepo({ repo_id: repo.repoId, repo_info: repo.repoInfo, repo_creds: repo.repoCreds });
  if (repo.code) await client.uploadCode(repo.repoId, repo.code.hash, repo.code.bytes);
}
