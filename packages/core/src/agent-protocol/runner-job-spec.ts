/**
 * The job spec the runner accepts (`POST /api/submit`'s `job_spec`), apart from the rest of the
 * runner's API (`runner-api.ts`): core's `JobSpecSchema` is built on it, and a client reading
 * runs (`dstack ps`) builds the job spec without the runner's other models.
 */
import * as z from 'zod';
import { FileArchiveMappingSchema, RepoExistsActionSchema, RunRepoDataSchema } from './repo-data.js';

/**
 * The part of dstack's `JobSpec` the runner reads. The server's `JobSpecSchema` (core's API
 * models) is built on these fields, so the job spec is defined once.
 */
export const RunnerJobSpecSchema = z.looseObject({
  /** `{run_name}-{job_num}-{replica_num}`. */
  job_name: z.string(),
  job_num: z.number().int().nonnegative(),
  replica_num: z.number().int().nonnegative().default(0),
  jobs_per_replica: z.number().int().positive().default(1),
  /** Shell commands, run by `/bin/sh -c` joined with ` && `. */
  commands: z.array(z.string()),
  env: z.record(z.string(), z.string()).default({}),
  /** Relative paths are resolved against the repo directory; null means the repo directory. */
  working_dir: z.string().nullish(),
  /** The repo the job's code comes from; null or `virtual`: none. */
  repo_data: RunRepoDataSchema.nullish(),
  /** sha256 of the code uploaded with the job (a diff for a remote repo, an archive for a local one). */
  repo_code_hash: z.string().nullish(),
  /** Where the repo goes: relative to the working directory, `~` the job user's home. Null: `.`. */
  repo_dir: z.string().nullish(),
  /** What to do when `repo_dir` is not empty. Null: `skip` (dstack's runners before `if_exists`). */
  repo_exists_action: RepoExistsActionSchema.nullish(),
  /** Clone only `repo_data.repo_branch` (`git clone --single-branch`). Null: all branches. */
  single_branch: z.boolean().nullish(),
  /** File archives (uploaded with `upload_archive?id=`) and where to unpack each. */
  file_archives: z.array(FileArchiveMappingSchema).nullish(),
  /** Seconds between SIGTERM and SIGKILL on stop; null means 5. */
  stop_duration: z.number().nonnegative().nullish(),
  image_name: z.string().nullish(),
  /**
   * Who the job's commands run as: `uid[:gid]` or `name[:group]`, resolved in the container's
   * `/etc/passwd` and `/etc/group`, or dstack's parsed `UnixUser`. Null: the runner's default.
   */
  user: z
    .union([
      z.string(),
      z.looseObject({
        uid: z.number().int().nonnegative().nullish(),
        gid: z.number().int().nonnegative().nullish(),
        username: z.string().nullish(),
        groupname: z.string().nullish(),
      }),
    ])
    .nullish(),
});
export type RunnerJobSpec = z.output<typeof RunnerJobSpecSchema>;
