import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/**
 * Network volumes (dstack's `volumes`, a pipeline table) and which instance each is attached to
 * for which job (`volume_attachments`, dstack's `volumes_attachments`).
 */
export default function volumes(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('volumes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('volume_provisioning_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('last_job_processed_at', t.time)
        .addColumn('to_be_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('volumes_project_id_name_idx')
        .on('volumes')
        .columns(['project_id', 'name'])
        .execute();
      await db.schema
        .createIndex('volumes_status_due_idx')
        .on('volumes')
        .columns(['status', 'last_processed_at'])
        .execute();
      await db.schema
        .createTable('volume_attachments')
        .addColumn('volume_id', 'text', (c) => c.notNull())
        .addColumn('instance_id', 'text', (c) => c.notNull())
        .addColumn('job_id', 'text')
        .addColumn('attachment_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('detach_requested_at', t.time)
        .addPrimaryKeyConstraint('volume_attachments_pkey', ['volume_id', 'instance_id'])
        .execute();
      await db.schema
        .createIndex('volume_attachments_instance_id_idx')
        .on('volume_attachments')
        .column('instance_id')
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('volume_attachments').execute();
      await db.schema.dropTable('volumes').execute();
    },
  };
}
