/**
 * `/api/project/{p}/repos/*` and `/api/files/*`, as dstack names them. Uploads are
 * `multipart/form-data` with the file named by its sha256, as dstack's clients send them, and
 * limited to `DSTACK_SERVER_CODE_UPLOAD_LIMIT` bytes.
 */
import {
  codeUploadLimitMessage,
  DeleteReposRequestSchema,
  FileArchiveSchema,
  GetFileArchiveByHashRequestSchema,
  GetRepoRequestSchema,
  InitRepoRequestSchema,
  isValidRepoId,
  REPO_ID_RULE,
  RepoHeadSchema,
  ServerClientError,
} from '@dstack/core';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { defineRoute, projectContext, type RouteDefinition, type UploadOptions } from '../http/route.js';
import { getArchiveByHash, uploadArchive } from './file-archives.js';
import { deleteRepos, getRepo, initRepo, listRepos, uploadCode } from './repos.js';

function codeUploadLimit(app: AppContext): number {
  return app.settings.code.uploadLimitBytes;
}

function uploadLimited(what: string): UploadOptions {
  return {
    maxBytes: codeUploadLimit,
    tooLarge: (bytes, limit) =>
      new ServerClientError(codeUploadLimitMessage(what, bytes, limit, 'DSTACK_SERVER_CODE_UPLOAD_LIMIT'), {
        code: 'code_too_large',
        fields: [['file']],
      }),
  };
}

function requiredQuery(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (!value) {
    throw new ServerClientError(`${name} (in the query): required`, {
      code: 'invalid_request',
      fields: [[name]],
    });
  }
  return value;
}

function uploadedFile(ctx: { upload?: { filename: string; bytes: Uint8Array } }) {
  if (!ctx.upload) throw new Error('an upload route without its file');
  return ctx.upload;
}

export const repoRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/repos/list',
    summary: "The project's repos",
    tags: ['repos'],
    auth: 'project-member',
    response: z.array(RepoHeadSchema),
    handler: async (ctx) => listRepos(ctx.app, projectContext(ctx).project),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/repos/get',
    summary: "A repo, with the caller's creds for it when asked",
    tags: ['repos'],
    auth: 'project-member',
    body: GetRepoRequestSchema,
    response: RepoHeadSchema,
    handler: async (ctx) => {
      const { project, user } = projectContext(ctx);
      return getRepo(ctx.app, project, user, ctx.body.repo_id, ctx.body.include_creds);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/repos/init',
    summary: "Create or update a repo and the caller's creds for it (before applying a run with it)",
    tags: ['repos'],
    auth: 'project-member',
    body: InitRepoRequestSchema,
    handler: async (ctx) => {
      const { project, user } = projectContext(ctx);
      await initRepo(
        ctx.app,
        project,
        user,
        ctx.body.repo_id,
        ctx.body.repo_info,
        ctx.body.repo_creds ?? null,
      );
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/repos/delete',
    summary: 'Delete repos with their creds and code',
    tags: ['repos'],
    auth: 'project-member',
    body: DeleteReposRequestSchema,
    handler: async (ctx) => {
      await deleteRepos(ctx.app, projectContext(ctx).project, ctx.body.repos_ids);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/repos/upload_code',
    summary: 'Upload code of a repo (?repo_id=; multipart file named by its sha256); stored once per content',
    tags: ['repos'],
    auth: 'project-member',
    upload: uploadLimited('Repo diff'),
    handler: async (ctx) => {
      const file = uploadedFile(ctx);
      const repoId = requiredQuery(ctx.query, 'repo_id');
      if (!isValidRepoId(repoId)) {
        throw new ServerClientError(`repo_id (in the query): repo id must be ${REPO_ID_RULE}`, {
          code: 'invalid_request',
          fields: [['repo_id']],
        });
      }
      await uploadCode(ctx.app, projectContext(ctx).project, repoId, file.filename, file.bytes);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/files/upload_archive',
    summary: 'Upload a file archive (multipart file named by its sha256); stored once per user and content',
    tags: ['files'],
    auth: 'user',
    upload: uploadLimited('Archive'),
    response: FileArchiveSchema,
    handler: async (ctx) => {
      const file = uploadedFile(ctx);
      if (!ctx.user) throw new Error('files/upload_archive without a user');
      return uploadArchive(ctx.app, ctx.user, file.filename, file.bytes);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/files/get_archive_by_hash',
    summary: "The caller's file archive with that sha256",
    tags: ['files'],
    auth: 'user',
    body: GetFileArchiveByHashRequestSchema,
    response: FileArchiveSchema,
    handler: async (ctx) => {
      if (!ctx.user) throw new Error('files/get_archive_by_hash without a user');
      return getArchiveByHash(ctx.app, ctx.user, ctx.body.hash);
    },
  }),
];
