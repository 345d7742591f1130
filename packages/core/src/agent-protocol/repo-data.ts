/**
 * What the runner needs to put a job's code in place (dstack's `RunRepoData`, `RemoteRepoCreds`,
 * `FileArchiveMapping`): defined here, in the agent protocol, because the runner reads them from
 * the job spec and the submit body; core's API models build on them.
 */
import * as z from 'zod';
// Only zod: this entry of core stays free of the rest.
import { repoNameSchema } from '../models/resource-names.js';

/**
 * A Git repo the runner clones (dstack's `RemoteRunRepoData`): its name, the remote branch and
 * commit the working tree is based on, and the committer identity for the clone. The clone URL
 * is not here: it travels with the repo's credentials (`repos/init`), which may hold a secret.
 */
export const RemoteRunRepoDataSchema = z.object({
  repo_type: z.literal('remote'),
  repo_name: repoNameSchema,
  repo_branch: z.string().nullish(),
  repo_hash: z.string().nullish(),
  repo_config_name: z.string().nullish(),
  repo_config_email: z.string().nullish(),
});
export type RemoteRunRepoData = z.output<typeof RemoteRunRepoDataSchema>;

/** A directory that is not a Git repo: its code is a tar archive (dstack's `LocalRunRepoData`). */
export const LocalRunRepoDataSchema = z.object({
  repo_type: z.literal('local'),
  repo_dir: z.string(),
});
export type LocalRunRepoData = z.output<typeof LocalRunRepoDataSchema>;

/** No repo (dstack's `VirtualRunRepoData`). */
export const VirtualRunRepoDataSchema = z.object({ repo_type: z.literal('virtual') });

export const RunRepoDataSchema = z.discriminatedUnion('repo_type', [
  RemoteRunRepoDataSchema,
  LocalRunRepoDataSchema,
  VirtualRunRepoDataSchema,
]);
export type RunRepoData = z.output<typeof RunRepoDataSchema>;

/**
 * How the runner reaches a remote repo (dstack's `RemoteRepoCreds`). A public repo needs only
 * `clone_url`; a private one (`dstack init`) has an `oauth_token` (HTTP(S) clone URL) or a
 * `private_key` (SSH clone URL). They are secrets: only the runner and `repos/get` with
 * `include_creds` see them.
 */
export const RemoteRepoCredsSchema = z.object({
  clone_url: z.string().min(1),
  private_key: z.string().nullish(),
  oauth_token: z.string().nullish(),
});
export type RemoteRepoCreds = z.output<typeof RemoteRepoCredsSchema>;

/** What the runner does when the repo's directory is not empty. */
export const RepoExistsActionSchema = z.enum(['error', 'skip']);

/** Where a file archive is unpacked in the job: `path` relative to the working directory, `~` the home. */
export const FileArchiveMappingSchema = z.object({ id: z.string(), path: z.string().min(1) });
export type FileArchiveMapping = z.output<typeof FileArchiveMappingSchema>;
