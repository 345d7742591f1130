/**
 * Repos and file archives (dstack's `core/models/repos` and `core/models/files`): what a run
 * spec says about the code it runs, and the API models of `repos/*` and `files/*`.
 * Field names are dstack's (snake_case on the wire).
 */
import * as z from 'zod';
import { formatByteSize } from '../agent-protocol/code-limits.js';
import { isSshCloneUrl } from '../agent-protocol/git-credentials.js';
import {
  LocalRunRepoDataSchema,
  RemoteRepoCredsSchema,
  VirtualRunRepoDataSchema,
} from '../agent-protocol/repo-data.js';
import { repoIdSchema, repoNameSchema } from './resource-names.js';

export {
  type FileArchiveMapping,
  FileArchiveMappingSchema,
  type LocalRunRepoData,
  LocalRunRepoDataSchema,
  type RemoteRepoCreds,
  RemoteRepoCredsSchema,
  type RemoteRunRepoData,
  RemoteRunRepoDataSchema,
  RepoExistsActionSchema,
  type RunRepoData,
  RunRepoDataSchema,
} from '../agent-protocol/repo-data.js';

/** What `repos/init` records about a repo (dstack's `AnyRepoInfo`). */
export const RepoInfoSchema = z.discriminatedUnion('repo_type', [
  z.object({ repo_type: z.literal('remote'), repo_name: repoNameSchema }),
  LocalRunRepoDataSchema,
  VirtualRunRepoDataSchema,
]);
export type RepoInfo = z.output<typeof RepoInfoSchema>;

/** An uploaded archive of files (`files/upload_archive`), named by the sha256 of its bytes. */
export const FileArchiveSchema = z.object({ id: z.string(), hash: z.string() });
export type FileArchive = z.output<typeof FileArchiveSchema>;

/**
 * `repos/init`. A key goes with an SSH clone URL and a token with an HTTP(S) one (how the runner
 * uses them), and not both: anything else is refused naming the field.
 */
export const InitRepoRequestSchema = z
  .object({
    repo_id: repoIdSchema,
    repo_info: RepoInfoSchema,
    repo_creds: RemoteRepoCredsSchema.nullish(),
  })
  .superRefine((request, ctx) => {
    const creds = request.repo_creds;
    if (!creds) return;
    if (creds.private_key && creds.oauth_token) {
      ctx.addIssue({
        code: 'custom',
        path: ['repo_creds', 'oauth_token'],
        message: 'give private_key or oauth_token, not both',
      });
    } else if (creds.private_key && !isSshCloneUrl(creds.clone_url)) {
      ctx.addIssue({
        code: 'custom',
        path: ['repo_creds', 'clone_url'],
        message: 'a private_key needs an SSH clone_url (ssh://… or user@host:path)',
      });
    } else if (creds.oauth_token && !/^https?:\/\//i.test(creds.clone_url)) {
      ctx.addIssue({
        code: 'custom',
        path: ['repo_creds', 'clone_url'],
        message: 'an oauth_token needs an HTTP(S) clone_url',
      });
    }
  });

/** `repos/get`. */
export const GetRepoRequestSchema = z.object({
  repo_id: repoIdSchema,
  include_creds: z.boolean().default(false),
});

/** `repos/delete`. */
export const DeleteReposRequestSchema = z.object({ repos_ids: z.array(repoIdSchema) });

/** A repo as `repos/list` and `repos/get` answer it (dstack's `RepoHead`, creds only when asked). */
export const RepoHeadSchema = z.object({
  repo_id: z.string(),
  repo_info: RepoInfoSchema,
  repo_creds: RemoteRepoCredsSchema.nullish(),
});
export type RepoHead = z.output<typeof RepoHeadSchema>;

/** `files/get_archive_by_hash`. */
export const GetFileArchiveByHashRequestSchema = z.object({ hash: z.string().min(1) });

/** dstack's default for `DSTACK_SERVER_CODE_UPLOAD_LIMIT` (and this CLI's `DSTACK_CLI_CODE_UPLOAD_LIMIT`): 2 MiB. */
export const DEFAULT_CODE_UPLOAD_LIMIT_BYTES = 2 * 1024 * 1024;

export { formatByteSize };

/**
 * The error dstack gives for code over the upload limit: both sizes, how to shrink the code and
 * the variable that changes the limit. Exact byte counts when the rounded sizes would look equal.
 */
export function codeUploadLimitMessage(what: string, bytes: number, limit: number, variable: string): string {
  let size = formatByteSize(bytes);
  let limitText = formatByteSize(limit);
  if (size === limitText) {
    size = `${bytes}B`;
    limitText = `${limit}B`;
  }
  return (
    `${what} size is ${size}, which exceeds the limit of ${limitText}.` +
    ' Use .gitignore/.dstackignore to exclude large files.' +
    ` This limit can be modified by setting the ${variable} environment variable.`
  );
}
