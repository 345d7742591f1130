/**
 * Existing databases migrate unchanged: the migrations as they stand must build exactly the schema
 * the server of commit eb5a1c5 built (its migrations were one file then), under the same names,
 * and a database that server wrote must open and migrate with its rows intact. The fixtures are
 * frozen: a change to an existing migration fails here; a new migration does not (the comparison
 * stops at the last migration the fixtures know).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { Migrator } from 'kysely';
import { describe, expect, it } from 'vitest';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { openDatabase } from './database.js';
import { getMigrations, migrateToLatest } from './migrations/index.js';
import { describeSchema, type SchemaDescription } from './schema-description.test.helpers.js';

const fixtures = join(import.meta.dirname, '__fixtures__');

function frozenSchema(dialect: 'sqlite' | 'postgres'): SchemaDescription {
  return JSON.parse(readFileSync(join(fixtures, `schema-${dialect}.json`), 'utf8')) as SchemaDescription;
}

describeEachDialect(
  'migrations build the schema of eb5a1c5',
  (getDb) => {
    it('under the same names, with the same tables, columns, constraints and indexes', async () => {
      const { db, dialect, postgresSchema } = getDb();
      const frozen = frozenSchema(dialect);
      const names = Object.keys(getMigrations(dialect));
      expect(names.slice(0, frozen.migrations.length)).toEqual(frozen.migrations);
      const migrator = new Migrator({
        db,
        provider: { getMigrations: async () => getMigrations(dialect) },
        ...(postgresSchema ? { migrationTableSchema: postgresSchema } : {}),
      });
      const { error } = await migrator.migrateTo(frozen.migrations.at(-1)!);
      if (error) throw error;
      expect(await describeSchema(db, dialect)).toEqual(frozen);
    });
  },
  { migrate: false },
);

describe('a SQLite database written by the server of eb5a1c5', () => {
  it('opens, migrates and keeps its rows', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'dstack-old-db-'));
    try {
      const file = join(directory, 'sqlite.db');
      const raw = new Sqlite(file);
      raw.exec(readFileSync(join(fixtures, 'sqlite-main-eb5a1c5.sql'), 'utf8'));
      raw.close();
      const opened = await openDatabase({ url: `sqlite://${file}`, serverDir: directory });
      try {
        const frozen = frozenSchema('sqlite');
        const applied = await migrateToLatest(opened.db, 'sqlite');
        expect(applied).toEqual(Object.keys(getMigrations('sqlite')).slice(frozen.migrations.length));
        const run = await opened.db
          .selectFrom('runs')
          .select(['run_name', 'priority', 'submitted_at'])
          .where('id', '=', 'r-1')
          .executeTakeFirstOrThrow();
        expect(run).toEqual({ run_name: 'old-run', priority: 5, submitted_at: 1_767_000_000_000 });
        const log = await opened.db
          .selectFrom('job_logs')
          .select(['job_id', 'position', 'timestamp'])
          .executeTakeFirstOrThrow();
        expect(log).toEqual({ job_id: 'j-1', position: 1, timestamp: 1_767_000_000_123 });
        const member = await opened.db.selectFrom('members').selectAll().executeTakeFirstOrThrow();
        expect(member).toEqual({ project_id: 'p-main', user_id: 'u-admin', project_role: 'admin' });
      } finally {
        await opened.close();
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
