import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import type { AnyDatabase } from './migration-helpers.js';

/**
 * Samples of running jobs' resource use (dstack's `job_metrics_points`): CPU time and memory as
 * the runner measured them, and per-GPU figures as JSON lists (null: the GPUs could not be read).
 */
export default function jobMetricsPoints(dialect: SqlDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('job_metrics_points')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('job_id', 'text', (c) => c.notNull())
        .addColumn('timestamp_micro', big, (c) => c.notNull())
        .addColumn('cpu_usage_micro', big, (c) => c.notNull())
        .addColumn('memory_usage_bytes', big, (c) => c.notNull())
        .addColumn('memory_working_set_bytes', big, (c) => c.notNull())
        .addColumn('gpus_memory_usage_bytes', 'text')
        .addColumn('gpus_util_percent', 'text')
        .execute();
      await db.schema
        .createIndex('job_metrics_points_job_id_timestamp_idx')
        .on('job_metrics_points')
        .columns(['job_id', 'timestamp_micro'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('job_metrics_points').execute();
    },
  };
}
