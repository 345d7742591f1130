/**
 * Repos (dstack's `repos` and `repo_creds`) and their uploaded code (`codes`). A run names its
 * repo by the client's `repo_id`; `repos/init` records what the repo is and, per user, how to reach
 * it (the clone URL, later a key or token for private repos: encrypted like every secret at rest).
 * Code is stored once per repo and content: its id is the sha256 of its bytes.
 */
import { randomUUID } from 'node:crypto';
import {
  type RemoteRepoCreds,
  RemoteRepoCredsSchema,
  type RepoHead,
  type RepoInfo,
  ResourceNotFoundError,
  ServerClientError,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import { repoInfoColumn } from '../db/json-columns.js';
import type { ProjectsTable, ReposTable, UsersTable } from '../db/schema.js';
import { checkContentHash } from './content-hash.js';

function repoNotFound(repoId: string): ResourceNotFoundError {
  return new ResourceNotFoundError(`Repo ${repoId} does not exist in this project: call repos/init first`);
}

export async function findRepo(
  app: AppContext,
  projectId: string,
  repoId: string,
): Promise<ReposTable | null> {
  const row = await app.db
    .selectFrom('repos')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('name', '=', repoId)
    .executeTakeFirst();
  return row ?? null;
}

/** Creates or updates the repo, and sets (or, without creds, removes) the user's creds for it. */
export async function initRepo(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  repoId: string,
  info: RepoInfo,
  creds: RemoteRepoCreds | null,
): Promise<void> {
  const now = Date.now();
  const encodedInfo = repoInfoColumn.encode(info);
  await app.db
    .insertInto('repos')
    .values({
      id: randomUUID(),
      project_id: project.id,
      name: repoId,
      type: info.repo_type,
      info: encodedInfo,
      created_at: now,
    })
    .onConflict((conflict) =>
      conflict.columns(['project_id', 'name']).doUpdateSet({ type: info.repo_type, info: encodedInfo }),
    )
    .execute();
  const repo = await findRepo(app, project.id, repoId);
  if (!repo) throw repoNotFound(repoId);
  if (creds === null || info.repo_type !== 'remote') {
    await app.db
      .deleteFrom('repo_creds')
      .where('repo_id', '=', repo.id)
      .where('user_id', '=', user.id)
      .execute();
    return;
  }
  const encrypted = app.encryption.encrypt(JSON.stringify(creds));
  await app.db
    .insertInto('repo_creds')
    .values({ id: randomUUID(), repo_id: repo.id, user_id: user.id, creds: encrypted, created_at: now })
    .onConflict((conflict) => conflict.columns(['repo_id', 'user_id']).doUpdateSet({ creds: encrypted }))
    .execute();
}

/** The user's creds for the repo, decrypted: only for the runner of that user's job and for `repos/get`. */
export async function repoCredsFor(
  app: AppContext,
  repoRowId: string,
  userId: string,
): Promise<RemoteRepoCreds | null> {
  const row = await app.db
    .selectFrom('repo_creds')
    .select('creds')
    .where('repo_id', '=', repoRowId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row ? RemoteRepoCredsSchema.parse(JSON.parse(app.encryption.decrypt(row.creds))) : null;
}

function repoHead(repo: ReposTable): RepoHead {
  return { repo_id: repo.name, repo_info: repoInfoColumn.decode(repo.info, repo.id) };
}

export async function listRepos(app: AppContext, project: ProjectsTable): Promise<RepoHead[]> {
  const rows = await app.db
    .selectFrom('repos')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('name')
    .execute();
  return rows.map(repoHead);
}

/** The repo, with the user's creds when asked (`include_creds`): they may hold the user's secret. */
export async function getRepo(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  repoId: string,
  includeCreds: boolean,
): Promise<RepoHead> {
  const repo = await findRepo(app, project.id, repoId);
  if (!repo) throw repoNotFound(repoId);
  const head = repoHead(repo);
  return includeCreds ? { ...head, repo_creds: await repoCredsFor(app, repo.id, user.id) } : head;
}

/** Deletes the repos, their creds and their code. */
export async function deleteRepos(
  app: AppContext,
  project: ProjectsTable,
  repoIds: readonly string[],
): Promise<void> {
  if (repoIds.length === 0) return;
  await app.db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('repos')
      .select('id')
      .where('project_id', '=', project.id)
      .where('name', 'in', repoIds)
      .execute();
    const ids = rows.map((row) => row.id);
    if (ids.length === 0) return;
    await trx.deleteFrom('codes').where('repo_id', 'in', ids).execute();
    await trx.deleteFrom('repo_creds').where('repo_id', 'in', ids).execute();
    await trx.deleteFrom('repos').where('id', 'in', ids).execute();
  });
}

/**
 * Stores the repo's code under its hash (the upload's file name, which must be the sha256 of the
 * bytes). Code already stored is not stored again: returns false then.
 */
export async function uploadCode(
  app: AppContext,
  project: ProjectsTable,
  repoId: string,
  codeHash: string,
  bytes: Uint8Array,
): Promise<boolean> {
  checkContentHash(codeHash, bytes);
  const repo = await findRepo(app, project.id, repoId);
  if (!repo) throw repoNotFound(repoId);
  const result = await app.db
    .insertInto('codes')
    .values({ id: randomUUID(), repo_id: repo.id, blob_hash: codeHash, blob: bytes, created_at: Date.now() })
    .onConflict((conflict) => conflict.columns(['repo_id', 'blob_hash']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** The stored code of the repo with that hash, or null. */
export async function codeBlob(
  app: AppContext,
  projectId: string,
  repoId: string,
  codeHash: string,
): Promise<Uint8Array | null> {
  const row = await app.db
    .selectFrom('codes')
    .innerJoin('repos', 'repos.id', 'codes.repo_id')
    .select('codes.blob')
    .where('repos.project_id', '=', projectId)
    .where('repos.name', '=', repoId)
    .where('codes.blob_hash', '=', codeHash)
    .executeTakeFirst();
  return row ? new Uint8Array(row.blob) : null;
}

/** A run's repo and code must be there when it is applied: the runner gets them when the job starts. */
export async function checkRunCode(
  app: AppContext,
  projectId: string,
  runSpec: {
    repo_id?: string | null;
    repo_data?: { repo_type: string } | null;
    repo_code_hash?: string | null;
  },
): Promise<void> {
  const repoType = runSpec.repo_data?.repo_type;
  if (repoType === undefined || repoType === 'virtual') return;
  const repoId = runSpec.repo_id;
  if (!repoId) {
    throw new ServerClientError('run_spec.repo_id: a run with repo_data needs the repo_id of repos/init', {
      code: 'invalid_request',
      fields: [['run_spec', 'repo_id']],
    });
  }
  if (!(await findRepo(app, projectId, repoId))) throw repoNotFound(repoId);
  const codeHash = runSpec.repo_code_hash;
  if (codeHash && !(await codeBlob(app, projectId, repoId, codeHash))) {
    throw new ServerClientError(
      `run_spec.repo_code_hash: no code ${codeHash} was uploaded for repo ${repoId} (repos/upload_code first)`,
      { code: 'invalid_request', fields: [['run_spec', 'repo_code_hash']] },
    );
  }
}
