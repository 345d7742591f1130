/**
 * File archives (dstack's `file_archives`): what a configuration's `files:` uploads, one archive
 * per entry, stored once per user and content (its sha256).
 */
import { randomUUID } from 'node:crypto';
import {
  type FileArchive,
  type FileArchiveMapping,
  ResourceNotFoundError,
  ServerClientError,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import type { UsersTable } from '../db/schema.js';
import { checkContentHash } from './content-hash.js';

async function archiveByHash(app: AppContext, userId: string, hash: string): Promise<FileArchive | null> {
  const row = await app.db
    .selectFrom('file_archives')
    .select(['id', 'blob_hash'])
    .where('user_id', '=', userId)
    .where('blob_hash', '=', hash)
    .executeTakeFirst();
  return row ? { id: row.id, hash: row.blob_hash } : null;
}

/** Stores the archive unless the user already has one with that content; answers the stored one either way. */
export async function uploadArchive(
  app: AppContext,
  user: UsersTable,
  hash: string,
  bytes: Uint8Array,
): Promise<FileArchive> {
  checkContentHash(hash, bytes);
  await app.db
    .insertInto('file_archives')
    .values({ id: randomUUID(), user_id: user.id, blob_hash: hash, blob: bytes, created_at: Date.now() })
    .onConflict((conflict) => conflict.columns(['user_id', 'blob_hash']).doNothing())
    .execute();
  const stored = await archiveByHash(app, user.id, hash);
  if (!stored) throw new Error(`file archive ${hash} vanished right after it was stored`);
  return stored;
}

export async function getArchiveByHash(
  app: AppContext,
  user: UsersTable,
  hash: string,
): Promise<FileArchive> {
  const stored = await archiveByHash(app, user.id, hash);
  if (!stored) throw new ResourceNotFoundError(`No file archive ${hash}`);
  return stored;
}

/** The bytes of each archive a job unpacks, by id; only the run's user's archives. */
export async function archiveBlobs(
  app: AppContext,
  userId: string,
  mappings: readonly FileArchiveMapping[],
): Promise<Map<string, Uint8Array>> {
  const ids = [...new Set(mappings.map((mapping) => mapping.id))];
  if (ids.length === 0) return new Map();
  const rows = await app.db
    .selectFrom('file_archives')
    .select(['id', 'blob'])
    .where('user_id', '=', userId)
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((row) => [row.id, new Uint8Array(row.blob)]));
}

/** Every archive a run's `file_archives` names must be the user's: checked when the run is applied. */
export async function checkRunFileArchives(
  app: AppContext,
  userId: string,
  mappings: readonly FileArchiveMapping[],
): Promise<void> {
  const ids = [...new Set(mappings.map((mapping) => mapping.id))];
  if (ids.length === 0) return;
  const rows = await app.db
    .selectFrom('file_archives')
    .select('id')
    .where('user_id', '=', userId)
    .where('id', 'in', ids)
    .execute();
  const found = new Set(rows.map((row) => row.id));
  mappings.forEach((mapping, index) => {
    if (!found.has(mapping.id)) {
      throw new ServerClientError(
        `run_spec.file_archives[${index}].id: no file archive ${mapping.id} was uploaded (files/upload_archive first)`,
        { code: 'invalid_request', fields: [['run_spec', 'file_archives', String(index), 'id']] },
      );
    }
  });
}
