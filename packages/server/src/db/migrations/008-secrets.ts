import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, columnTypes } from './migration-helpers.js';

/**
 * Project secrets (`dstack secret set`): the value is encrypted with the server's encryption
 * (`app.encryption`), the name unique per project.
 */
export default function projectSecrets(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('secrets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('updated_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('secrets_project_id_name_key', ['project_id', 'name'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('secrets').execute();
    },
  };
}
