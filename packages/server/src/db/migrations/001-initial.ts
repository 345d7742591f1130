import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes, PIPELINE_TABLES } from './migration-helpers.js';

export default function initialMigration(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('global_role', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();

      await db.schema
        .createTable('projects')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('ssh_private_key', 'text', (c) => c.notNull())
        .addColumn('ssh_public_key', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      await db.schema
        .createTable('members')
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('project_role', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('members_pkey', ['project_id', 'user_id'])
        .execute();
      await db.schema.createIndex('members_user_id_idx').on('members').column('user_id').execute();

      await db.schema
        .createTable('backends')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('auth', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('backends_project_id_type_key', ['project_id', 'type'])
        .execute();

      await db.schema
        .createTable('fleets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('auto_created', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('fleets_project_id_name_idx')
        .on('fleets')
        .columns(['project_id', 'name'])
        .execute();

      await db.schema
        .createTable('instances')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('fleet_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('instance_num', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('unreachable', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('termination_reason', 'text')
        .addColumn('termination_reason_message', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('started_at', t.time)
        .addColumn('finished_at', t.time)
        .addColumn('backend', 'text')
        .addColumn('region', 'text')
        .addColumn('price', t.real)
        .addColumn('offer', 'text')
        .addColumn('job_provisioning_data', 'text')
        .addColumn('requirements', 'text')
        .addColumn('instance_configuration', 'text')
        .addColumn('termination_idle_time', t.time)
        .addColumn('termination_deadline', t.time)
        .addColumn('provisioning_deadline', t.time)
        .addColumn('first_termination_retry_at', t.time)
        .addColumn('last_termination_retry_at', t.time)
        .addColumn('idle_since', t.time)
        .addColumn('total_blocks', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('busy_blocks', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema.createIndex('instances_fleet_id_idx').on('instances').column('fleet_id').execute();
      await db.schema.createIndex('instances_project_id_idx').on('instances').column('project_id').execute();

      await db.schema
        .createTable('runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('run_name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('termination_reason', 'text')
        .addColumn('run_spec', 'text', (c) => c.notNull())
        .addColumn('submitted_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('resubmission_attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_triggered_at', t.time)
        .addColumn('fleet_id', 'text')
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('runs_project_id_run_name_idx')
        .on('runs')
        .columns(['project_id', 'run_name'])
        .execute();

      await db.schema
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('run_name', 'text', (c) => c.notNull())
        .addColumn('job_num', 'integer', (c) => c.notNull())
        .addColumn('replica_num', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('job_name', 'text', (c) => c.notNull())
        .addColumn('submission_num', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('termination_reason', 'text')
        .addColumn('termination_reason_message', 'text')
        .addColumn('exit_status', 'integer')
        .addColumn('job_spec_data', 'text', (c) => c.notNull())
        .addColumn('job_provisioning_data', 'text')
        .addColumn('job_runtime_data', 'text')
        .addColumn('instance_id', 'text')
        .addColumn('instance_assigned', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('submitted_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('finished_at', t.time)
        .addColumn('runner_timestamp', t.time)
        .addColumn('remove_at', t.time)
        .addColumn('disconnected_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema.createIndex('jobs_run_id_idx').on('jobs').column('run_id').execute();
      await db.schema.createIndex('jobs_instance_id_idx').on('jobs').column('instance_id').execute();

      await db.schema
        .createTable('job_logs')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('job_id', 'text', (c) => c.notNull())
        .addColumn('timestamp', t.time, (c) => c.notNull())
        .addColumn('log_source', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('job_logs_job_id_timestamp_idx')
        .on('job_logs')
        .columns(['job_id', 'timestamp'])
        .execute();

      for (const table of PIPELINE_TABLES) {
        // The pipelines' claim query: unlocked (or expired) rows of some statuses, oldest processed first.
        await db.schema
          .createIndex(`${table}_pipeline_idx`)
          .on(table)
          .columns(['status', 'lock_expires_at', 'last_processed_at'])
          .execute();
      }
    },
  };
}
