import type { Migration } from 'kysely';
import { type AnyDatabase, PIPELINE_TABLES } from './migration-helpers.js';

/**
 * Indexes for the scheduler's hot statements:
 * - the first pipeline index (`status, lock_expires_at, last_processed_at`) serves no query since
 *   002's `status, last_processed_at` took over the claims, yet every claim and release of a row
 *   rewrote its entry: it goes;
 * - a job that may take capacity asks whether a higher-priority run of its project waits
 *   (run-priority.ts): it read every submitted job of every project to find none; by the project's
 *   active runs of a higher priority it reads only those;
 * - the instances a job may take (fleet-instance-offers.ts) were read by project, every instance
 *   the project ever had (terminated ones stay); by fleet and status only the idle and busy ones.
 *   The index by fleet alone is this one's prefix: it goes.
 */
export default function schedulerIndexes(): Migration {
  return {
    async up(db: AnyDatabase) {
      for (const table of PIPELINE_TABLES) await db.schema.dropIndex(`${table}_pipeline_idx`).execute();
      await db.schema
        .createIndex('runs_project_id_status_priority_idx')
        .on('runs')
        .columns(['project_id', 'status', 'priority'])
        .execute();
      await db.schema.dropIndex('instances_fleet_id_idx').execute();
      await db.schema
        .createIndex('instances_fleet_id_status_idx')
        .on('instances')
        .columns(['fleet_id', 'status'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('instances_fleet_id_status_idx').execute();
      await db.schema.createIndex('instances_fleet_id_idx').on('instances').column('fleet_id').execute();
      await db.schema.dropIndex('runs_project_id_status_priority_idx').execute();
      for (const table of PIPELINE_TABLES) {
        await db.schema
          .createIndex(`${table}_pipeline_idx`)
          .on(table)
          .columns(['status', 'lock_expires_at', 'last_processed_at'])
          .execute();
      }
    },
  };
}
