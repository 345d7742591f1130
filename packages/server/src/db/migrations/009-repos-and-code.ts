import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/**
 * Repos, their credentials and uploaded code, and file archives (dstack's `repos`, `repo_creds`,
 * `codes`, `file_archives`). Blobs are stored in the database, keyed by their sha256, once each.
 */
export default function reposAndCode(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  const blob = dialect === 'postgres' ? 'bytea' : 'blob';
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('repos')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('info', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('repos_project_id_name_key', ['project_id', 'name'])
        .execute();
      await db.schema
        .createTable('repo_creds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('repo_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('creds', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('repo_creds_repo_id_user_id_key', ['repo_id', 'user_id'])
        .execute();
      await db.schema
        .createTable('codes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('repo_id', 'text', (c) => c.notNull())
        .addColumn('blob_hash', 'text', (c) => c.notNull())
        .addColumn('blob', blob, (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('codes_repo_id_blob_hash_key', ['repo_id', 'blob_hash'])
        .execute();
      await db.schema
        .createTable('file_archives')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('blob_hash', 'text', (c) => c.notNull())
        .addColumn('blob', blob, (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('file_archives_user_id_blob_hash_key', ['user_id', 'blob_hash'])
        .execute();
    },
    async down(db: AnyDatabase) {
      for (const table of ['file_archives', 'codes', 'repo_creds', 'repos']) {
        await db.schema.dropTable(table).execute();
      }
    },
  };
}
