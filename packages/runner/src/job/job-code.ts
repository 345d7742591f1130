/**
 * Puts a job's code in place before its commands run (dstack's runner `setupRepo` and
 * `setupFiles`): the repo at `repo_dir` (a clone of the remote at its commit with the user's
 * uncommitted diff applied, or an unpacked archive of a plain directory), then every file
 * archive at its path. Relative paths are relative to the working directory, `~` is the job
 * user's home, as in dstack.
 */
import { cp, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  codeUnpackedLimitMessage,
  DEFAULT_CODE_UNPACKED_LIMIT_BYTES,
  type FileArchiveMapping,
  type RunnerSubmission,
} from '@dstack/core/agent-protocol';
import { extractTarArchive, UnpackedSizeLimitError } from '../archive/extract-tar.js';
import { cloneRepo, runGit } from './git-clone.js';

/** What was uploaded for the job: the code blob and the file archives, as files on disk. */
export interface UploadedCode {
  /** The `upload_code` bytes (a git diff or an archive); undefined when none or empty. */
  codePath: string | undefined;
  /** `upload_archive?id=` files by id. */
  archivePaths: ReadonlyMap<string, string>;
}

export interface CodeSetupInput {
  submission: RunnerSubmission;
  workingDir: string;
  /** The job user's home, for `~` in paths. */
  homeDir: string;
  uploaded: UploadedCode;
  /** A scratch directory on the runner's side (archives are unpacked there first). */
  scratchDir: string;
  log(message: string): void;
}

/** A path of the job spec: absolute, `~` or `~/…` (the home), or relative to the working directory. */
export function expandJobPath(path: string, workingDir: string, homeDir: string): string {
  if (path === '~') return homeDir;
  if (path.startsWith('~/')) return join(homeDir, path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(workingDir, path);
}

/**
 * Unpacks one of the job's archives (`what` names it in errors) within the cap the server sent
 * (`code_unpacked_limit`; the runner's default from a server that sends none). Over the cap, the
 * error names the cap and the server's setting that raises it.
 */
export async function extractJobArchive(
  submission: RunnerSubmission,
  archivePath: string,
  destination: string,
  what: string,
): Promise<void> {
  const limit = submission.code_unpacked_limit ?? DEFAULT_CODE_UNPACKED_LIMIT_BYTES;
  try {
    await extractTarArchive(archivePath, destination, { maxUnpackedBytes: limit });
  } catch (error) {
    if (error instanceof UnpackedSizeLimitError) {
      throw new UnpackedSizeLimitError(limit, codeUnpackedLimitMessage(what, limit));
    }
    throw error;
  }
}

/** Where the job's repo goes, or undefined when the job has none. */
export function repoDirOf(
  submission: RunnerSubmission,
  workingDir: string,
  homeDir: string,
): string | undefined {
  const repoData = submission.job_spec.repo_data;
  if (repoData === null || repoData === undefined || repoData.repo_type === 'virtual') return undefined;
  return expandJobPath(submission.job_spec.repo_dir ?? '.', workingDir, homeDir);
}

/**
 * Checks out the repo and unpacks the file archives. Returns the directories it filled (for the
 * caller to hand to the job's user). Throws an error naming what failed: the job then fails to start.
 */
export async function setUpJobCode(input: CodeSetupInput): Promise<string[]> {
  const filled: string[] = [];
  const repoDir = repoDirOf(input.submission, input.workingDir, input.homeDir);
  if (repoDir !== undefined && (await prepareRepoDir(input, repoDir))) {
    await checkOutRepo(input, repoDir);
    filled.push(repoDir);
  }
  for (const mapping of input.submission.job_spec.file_archives ?? []) {
    filled.push(await unpackFileArchive(input, mapping));
  }
  return filled;
}

/** False when the repo directory is not empty and the job says `skip`; throws for `error`. */
async function prepareRepoDir(input: CodeSetupInput, repoDir: string): Promise<boolean> {
  const entries = await readdir(repoDir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  if (entries.length > 0) {
    // dstack's runners before `if_exists` skipped; the server always sends the action.
    if ((input.submission.job_spec.repo_exists_action ?? 'skip') === 'error') {
      throw new Error(`repo dir is not empty: ${repoDir} (repos[0].if_exists is 'error')`);
    }
    input.log(`skipping the repo checkout: ${repoDir} is not empty`);
    return false;
  }
  await mkdir(repoDir, { recursive: true });
  return true;
}

async function checkOutRepo(input: CodeSetupInput, repoDir: string): Promise<void> {
  const repoData = input.submission.job_spec.repo_data;
  const codePath = input.uploaded.codePath;
  if (repoData?.repo_type === 'remote') {
    const creds = input.submission.repo_credentials;
    if (!creds)
      throw new Error(`repo ${repoData.repo_name}: the job has no repo_credentials (its clone URL)`);
    await cloneRepo({
      repoDir,
      repoName: repoData.repo_name,
      creds,
      branch: repoData.repo_branch ?? null,
      hash: repoData.repo_hash ?? null,
      singleBranch: input.submission.job_spec.single_branch ?? false,
      scratchDir: input.scratchDir,
    });
    if (repoData.repo_config_name)
      await runGit(repoDir, ['config', 'user.name', repoData.repo_config_name], {});
    if (repoData.repo_config_email)
      await runGit(repoDir, ['config', 'user.email', repoData.repo_config_email], {});
    if (codePath !== undefined) {
      await runGit(repoDir, ['apply', '--whitespace=nowarn', codePath], {});
      input.log(`applied the uploaded diff in ${repoDir}`);
    }
    input.log(`checked out ${repoData.repo_name} at ${repoData.repo_hash ?? repoData.repo_branch ?? 'HEAD'}`);
  } else if (codePath !== undefined) {
    await extractJobArchive(input.submission, codePath, repoDir, 'The code');
    input.log(`unpacked the code into ${repoDir}`);
  }
}

/**
 * Unpacks an archive whose one top-level entry is the local file or directory, and puts that
 * entry at the mapping's path (replacing what was there), as dstack's runner renames it.
 */
async function unpackFileArchive(input: CodeSetupInput, mapping: FileArchiveMapping): Promise<string> {
  const archivePath = input.uploaded.archivePaths.get(mapping.id);
  if (archivePath === undefined)
    throw new Error(`file archive ${mapping.id} (for ${mapping.path}) was not uploaded`);
  const destination = expandJobPath(mapping.path, input.workingDir, input.homeDir);
  const unpacked = join(input.scratchDir, `unpack-${mapping.id}`);
  await rm(unpacked, { recursive: true, force: true });
  await mkdir(unpacked, { recursive: true });
  try {
    await extractJobArchive(input.submission, archivePath, unpacked, `The files entry for ${mapping.path}`);
    const top = await readdir(unpacked);
    if (top.length !== 1) {
      throw new Error(`file archive ${mapping.id} must hold one top-level entry, found ${top.length}`);
    }
    const source = join(unpacked, top[0] as string);
    await mkdir(dirname(destination), { recursive: true });
    await rm(destination, { recursive: true, force: true });
    await rename(source, destination).catch(async (error: NodeJS.ErrnoException) => {
      // The destination is on another file system (a volume, a bind mount): copy instead.
      if (error.code !== 'EXDEV') throw error;
      await cp(source, destination, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    });
    input.log(`unpacked ${mapping.path}`);
    return destination;
  } finally {
    await rm(unpacked, { recursive: true, force: true });
  }
}
