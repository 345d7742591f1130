import type { Migration } from 'kysely';
import type { AnyDatabase } from './migration-helpers.js';

/**
 * Log reads go by job: the jobs of a run (one seek each) and each job's rows past its own
 * cursor (logs/log-cursor.ts says why per job).
 */
export default function jobLogsByRunAndJob(): Migration {
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createIndex('job_logs_run_id_job_id_id_idx')
        .on('job_logs')
        .columns(['run_id', 'job_id', 'id'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('job_logs_run_id_job_id_id_idx').execute();
    },
  };
}
