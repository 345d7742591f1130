import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, addColumnsSteps, columnTypes } from './migration-helpers.js';

/** Gateways (dstack's `gateways`, a pipeline table), and the gateway and hostname of each service run. */
export default function gateways(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  const serviceColumns = addColumnsSteps(dialect, {
    runs: [
      { name: 'gateway_id', type: 'text' },
      { name: 'service_hostname', type: 'text' },
    ],
  });
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('gateways')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('certificate_private_key', 'text')
        .addColumn('wildcard_domain', 'text')
        .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('provisioning_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('to_be_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('gateways_project_id_name_idx')
        .on('gateways')
        .columns(['project_id', 'name'])
        .execute();
      await db.schema
        .createIndex('gateways_status_due_idx')
        .on('gateways')
        .columns(['status', 'last_processed_at'])
        .execute();
      await serviceColumns.up(db);
    },
    async down(db: AnyDatabase) {
      await serviceColumns.down?.(db);
      await db.schema.dropTable('gateways').execute();
    },
  };
}
