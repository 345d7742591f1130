import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/** dstack's `events` and `event_targets`: what happened, by whom, to what. */
export default function eventTables(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('recorded_at', t.time, (c) => c.notNull())
        // No foreign key: users are deleted for good, and their events stay with the name they had.
        .addColumn('actor_user_id', 'text')
        .addColumn('actor_user_name', 'text')
        .execute();
      await db.schema
        .createIndex('events_recorded_at_idx')
        .on('events')
        .columns(['recorded_at', 'id'])
        .execute();
      await db.schema.createIndex('events_actor_user_id_idx').on('events').column('actor_user_id').execute();
      await db.schema
        .createTable('event_targets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
        .addColumn('entity_type', 'text', (c) => c.notNull())
        .addColumn('entity_project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
        .addColumn('entity_run_id', 'text')
        .addColumn('entity_fleet_id', 'text')
        .addColumn('entity_id', 'text', (c) => c.notNull())
        .addColumn('entity_name', 'text', (c) => c.notNull())
        .execute();
      const indexes: Record<string, string[]> = {
        event_targets_event_id_idx: ['event_id'],
        event_targets_entity_idx: ['entity_type', 'entity_id'],
        event_targets_entity_project_id_idx: ['entity_project_id'],
        event_targets_entity_run_id_idx: ['entity_run_id'],
        event_targets_entity_fleet_id_idx: ['entity_fleet_id'],
      };
      for (const [name, columns] of Object.entries(indexes)) {
        await db.schema.createIndex(name).on('event_targets').columns(columns).execute();
      }
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('event_targets').execute();
      await db.schema.dropTable('events').execute();
    },
  };
}
