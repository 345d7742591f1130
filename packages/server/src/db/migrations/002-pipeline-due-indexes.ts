import type { Migration } from 'kysely';
import { type AnyDatabase, PIPELINE_TABLES } from './migration-helpers.js';

/**
 * The claim query asks for rows of some statuses with `last_processed_at <= due`.
 * The first pipeline index puts `lock_expires_at` between the two, so SQLite could
 * only seek on the status and then read every active row; with the time next to
 * the status it reads only the due ones.
 */
export default function pipelineDueIndexes(): Migration {
  return {
    async up(db: AnyDatabase) {
      for (const table of PIPELINE_TABLES) {
        await db.schema
          .createIndex(`${table}_status_due_idx`)
          .on(table)
          .columns(['status', 'last_processed_at'])
          .execute();
      }
    },
    async down(db: AnyDatabase) {
      for (const table of PIPELINE_TABLES) await db.schema.dropIndex(`${table}_status_due_idx`).execute();
    },
  };
}
