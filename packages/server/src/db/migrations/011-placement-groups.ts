import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/** Cluster fleets' placement groups at their backends (dstack's `placement_groups`). */
export default function placementGroups(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('placement_groups')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('fleet_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('provisioning_data', 'text')
        .addColumn('fleet_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', t.time, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('placement_groups_fleet_id_idx')
        .on('placement_groups')
        .columns(['fleet_id', 'deleted'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('placement_groups').execute();
    },
  };
}
