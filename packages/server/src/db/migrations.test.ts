import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkPostgresReachable,
  createTestDatabase,
  describeEachDialect,
  type TestDatabase,
} from '../testing/test-database.test.helpers.js';
import { openDatabase } from './database.js';
import { getMigrations, migrateToLatest } from './migrations/index.js';

describeEachDialect(
  'migrations',
  (getDb) => {
    it('creates every table and is idempotent', async () => {
      const { db, dialect } = getDb();
      expect(await migrateToLatest(db, dialect)).toEqual(Object.keys(getMigrations(dialect)));
      expect(await migrateToLatest(db, dialect)).toEqual([]);
      const tables = (await db.introspection.getTables()).map((table) => table.name);
      expect(tables).toEqual(
        expect.arrayContaining([
          'users',
          'projects',
          'members',
          'backends',
          'fleets',
          'instances',
          'runs',
          'jobs',
          'job_logs',
          'volumes',
          'volume_attachments',
        ]),
      );
    });

    it('enforces unique names and autoincrements log ids', async () => {
      const { db } = getDb();
      const user = {
        id: 'u1',
        name: 'alice',
        token_hash: 'h1',
        global_role: 'user' as const,
        created_at: Date.now(),
        active: 1,
      };
      await db.insertInto('users').values(user).execute();
      await expect(
        db
          .insertInto('users')
          .values({ ...user, id: 'u2', token_hash: 'h2' })
          .execute(),
      ).rejects.toThrow();
      const log = {
        project_id: 'p',
        run_id: 'r',
        job_id: 'j',
        timestamp: 1_700_000_000_123,
        log_source: 'stdout' as const,
        message: 'aGk=',
      };
      const first = await db.insertInto('job_logs').values(log).returning('id').executeTakeFirstOrThrow();
      const second = await db.insertInto('job_logs').values(log).returning('id').executeTakeFirstOrThrow();
      expect(typeof first.id).toBe('number');
      expect(second.id).toBeGreaterThan(first.id);
      const row = await db
        .selectFrom('job_logs')
        .select('timestamp')
        .where('id', '=', first.id)
        .executeTakeFirstOrThrow();
      // Millisecond times exceed 32 bits and must come back as numbers on both dialects.
      expect(row.timestamp).toBe(1_700_000_000_123);
    });
  },
  { migrate: false },
);

describe('migrations on Postgres from two connections at once', () => {
  let database: TestDatabase | undefined;
  afterEach(async () => {
    await database?.close();
    database = undefined;
  });

  it('applies once and both callers succeed', async (context) => {
    const unreachable = await checkPostgresReachable();
    if (unreachable) context.skip(unreachable);
    database = await createTestDatabase('postgres', { migrate: false });
    const second = await openDatabase({
      url: database.url,
      serverDir: database.directory,
      postgresSchema: database.postgresSchema!,
    });
    try {
      const [a, b] = await Promise.all([
        migrateToLatest(database.db, 'postgres'),
        migrateToLatest(second.db, 'postgres'),
      ]);
      expect([...a, ...b]).toEqual(Object.keys(getMigrations('postgres')));
      const count = await sql<{ count: number }>`select count(*)::int as count from kysely_migration`.execute(
        database.db,
      );
      expect(count.rows[0]?.count).toBe(Object.keys(getMigrations('postgres')).length);
    } finally {
      await second.close();
    }
  });
});

describe('introspection on Postgres', () => {
  const databases: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(databases.splice(0).map((database) => database.close()));
  });

  // Kysely's own introspector scans every schema and resolves each by name: a schema another
  // deployment drops meanwhile failed the migration with "schema … does not exist".
  it("sees only the connection's own schema", async (context) => {
    const unreachable = await checkPostgresReachable();
    if (unreachable) context.skip(unreachable);
    const own = await createTestDatabase('postgres');
    databases.push(own);
    const other = await createTestDatabase('postgres', { migrate: false });
    databases.push(other);
    await sql`create table neighbour (id integer)`.execute(other.db);

    const tables = await own.db.introspection.getTables({ withInternalKyselyTables: true });
    expect(new Set(tables.map((table) => table.schema))).toEqual(new Set([own.postgresSchema]));
    expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['users', 'kysely_migration']));
    expect(tables.map((table) => table.name)).not.toContain('neighbour');
    expect((await own.db.introspection.getTables()).map((table) => table.name)).not.toContain(
      'kysely_migration',
    );
    const users = tables.find((table) => table.name === 'users');
    expect(users?.columns.find((column) => column.name === 'name')).toMatchObject({ isNullable: false });
  });
});
