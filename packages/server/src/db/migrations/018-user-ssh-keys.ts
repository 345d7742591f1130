import type { Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';
import { type AnyDatabase, addColumnsSteps, columnTypes } from './migration-helpers.js';

/**
 * Users' own SSH key pairs, as dstack keeps them: dstack's clients take the pair from
 * `users/get_my_user` and log in to jobs with it (the private half encrypted at rest; users made
 * before get theirs at their first `get_my_user`); and the public keys users add.
 */
export default function userSshKeys(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  const keyPair = addColumnsSteps(dialect, {
    users: [
      { name: 'ssh_public_key', type: 'text' },
      { name: 'ssh_private_key', type: 'text' },
    ],
  });
  return {
    async up(db: AnyDatabase) {
      await keyPair.up(db);
      // More keys a user may log in to jobs with (dstack's `user_public_keys`).
      await db.schema
        .createTable('user_public_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('user_public_keys_user_id_fingerprint_key', ['user_id', 'fingerprint'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('user_public_keys').execute();
      await keyPair.down?.(db);
    },
  };
}
