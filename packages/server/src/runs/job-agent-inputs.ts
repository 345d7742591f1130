/**
 * What a starting job's agents get: the shim's task resources, the job spec with its secrets
 * resolved, the repo's code and `files:` archives, and the volumes' mounts. Each ends the job
 * (and returns null) when what it needs is gone.
 */

import type { JobRuntimeData, JobSpec, RemoteRepoCreds } from '@dstack/core';
import { jobSpecOf, runSpecOf } from '../db/json-columns.js';
import { archiveBlobs } from '../repos/file-archives.js';
import { codeBlob, findRepo, repoCredsFor } from '../repos/repos.js';
import {
  referencesSecrets,
  resolveJobSpecSecrets,
  SecretReferenceError,
} from '../secrets/secret-references.js';
import { projectSecretValues } from '../secrets/secrets.js';
import { attachJobVolumes, JobVolumeError, type TaskMounts } from '../volumes/job-volumes.js';
import { type JobContext, terminate } from './job-running-context.js';
import type { JobRuntime } from './job-runtime.js';
import { hostJobCommands } from './job-specs.js';

/**
 * The resources the shim gives the task: a job on part of an instance gets its share's GPUs,
 * CPUs and memory (bytes); a job on a whole instance gets every GPU when it asks for any, and
 * no CPU or memory limit.
 */
export function taskResourcesOf(
  jobSpec: JobSpec,
  runtime: JobRuntimeData | null,
): { gpu: number; cpu: number; memory: number } {
  if (runtime?.gpu != null) {
    return {
      gpu: runtime.gpu,
      cpu: runtime.cpu ?? 0,
      memory: Math.round((runtime.memory ?? 0) * 1024 ** 3),
    };
  }
  return { gpu: (jobSpec.requirements.resources.gpu?.count.min ?? 0) > 0 ? -1 : 0, cpu: 0, memory: 0 };
}

/**
 * The job spec as the agents get it: `${{ secrets.NAME }}` replaced by the secrets' values. Read
 * at each submit and never stored: the job row keeps the references. Null when a secret is gone
 * (deleted since the run was accepted): the job is terminated, as dstack does, naming the field
 * and the secret, never a value.
 */
export async function agentJobSpec(
  context: JobContext,
  runtime: JobRuntime = 'container',
): Promise<JobSpec | null> {
  const stored = jobSpecOf(context.job);
  // The stored spec has dstack's command line for a container of its image (job-runtime.ts).
  const jobSpec =
    runtime === 'process' ? { ...stored, commands: hostJobCommands(runSpecOf(context.run), stored) } : stored;
  // Every spec is interpolated (`$$` is an escaped `$` in any value, as in dstack); the secrets
  // are decrypted only for one that references any.
  const secrets = referencesSecrets(jobSpec)
    ? await projectSecretValues(context.app, context.job.project_id)
    : new Map<string, string>();
  try {
    return resolveJobSpecSecrets(jobSpec, secrets);
  } catch (error) {
    if (!SecretReferenceError.isInstance(error)) throw error;
    await terminate(context, 'terminated_by_server', `Secrets interpolation error: ${error.message}`);
    return null;
  }
}

/** What the runner gets besides the job spec: the repo's code and creds, the `files:` archives. */
export interface JobCode {
  code: Uint8Array;
  repoCredentials: RemoteRepoCreds | null;
  archives: Map<string, Uint8Array>;
}

/**
 * The job's code as stored when the run was applied. Null when some of it is gone (the repo or
 * an archive deleted since): the job is terminated naming what is missing.
 */
export async function jobCode(context: JobContext, jobSpec: JobSpec): Promise<JobCode | null> {
  const { app, run } = context;
  const runSpec = runSpecOf(run);
  const missing = (what: string) =>
    terminate(context, 'terminated_by_server', `${what} is no longer on the server`).then(() => null);
  let code: Uint8Array = new Uint8Array();
  let repoCredentials: RemoteRepoCreds | null = null;
  const repoId = runSpec.repo_id;
  if (jobSpec.repo_data && jobSpec.repo_data.repo_type !== 'virtual' && repoId) {
    const repo = await findRepo(app, run.project_id, repoId);
    if (!repo) return missing(`repo ${repoId}`);
    if (jobSpec.repo_code_hash) {
      const blob = await codeBlob(app, run.project_id, repoId, jobSpec.repo_code_hash);
      if (!blob) return missing(`the code ${jobSpec.repo_code_hash} of repo ${repoId}`);
      code = blob;
    }
    repoCredentials = await repoCredsFor(app, repo.id, run.user_id);
    if (jobSpec.repo_data.repo_type === 'remote' && !repoCredentials) {
      return missing(`the clone URL of repo ${repoId} (repos/init with repo_creds)`);
    }
  }
  const mappings = jobSpec.file_archives ?? [];
  const archives = await archiveBlobs(app, run.user_id, mappings);
  const lost = mappings.find((mapping) => !archives.has(mapping.id));
  if (lost) return missing(`file archive ${lost.id} (for ${lost.path})`);
  return { code, repoCredentials, archives };
}

/**
 * The job's volumes attached to its instance, and what the task mounts; null when they cannot be
 * had: the job then ends `volume_error` (its end detaches what was attached).
 */
export async function taskMounts(context: JobContext, jobSpec: JobSpec): Promise<TaskMounts | null> {
  const { app, job, instance, provisioningData } = context;
  try {
    return await attachJobVolumes(app, {
      projectId: job.project_id,
      jobId: job.id,
      jobSpec,
      instance,
      provisioningData,
    });
  } catch (error) {
    if (!(error instanceof JobVolumeError)) throw error;
    await terminate(context, 'volume_error', error.message);
    return null;
  }
}
