import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/**
 * A job's log entries are keyed by their runner position: storing inserts with ON CONFLICT DO
 * NOTHING, so a batch two replicas pulled (or one pulled again after a failover) is kept once.
 * Older rows have no position (NULLs never conflict).
 */
export default function jobLogsPositionKey(dialect: SqlDialect): Migration {
  return {
    async up(db: AnyDatabase) {
      await db.schema.alterTable('job_logs').addColumn('position', columnTypes(dialect).time).execute();
      await db.schema
        .createIndex('job_logs_job_id_position_key')
        .unique()
        .on('job_logs')
        .columns(['job_id', 'position'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('job_logs_job_id_position_key').execute();
      await db.schema.alterTable('job_logs').dropColumn('position').execute();
    },
  };
}
