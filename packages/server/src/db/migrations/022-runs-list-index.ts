import type { Migration } from 'kysely';
import type { AnyDatabase } from './migration-helpers.js';

/**
 * `runs/list` pages a project's runs newest first: without this index its first page sorted every
 * run of the project (a temporary B-tree on SQLite) on each call, which grows with the runs kept.
 */
export default function runsListIndex(): Migration {
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createIndex('runs_project_id_submitted_at_idx')
        .on('runs')
        .columns(['project_id', 'submitted_at', 'id'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('runs_project_id_submitted_at_idx').execute();
    },
  };
}
