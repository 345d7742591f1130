/**
 * Times are whole milliseconds in both databases: a fraction computed for a time column (a
 * quarter of a job's age) is rounded when written, where Postgres would refuse the whole write.
 */
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql } from 'kysely';
import { beforeEach, expect, it } from 'vitest';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import type { Database, InstancesTable } from './schema.js';
import { FRACTIONAL_COLUMNS, WholeNumbersPlugin } from './whole-numbers.js';

const FRACTIONAL_TIME = 1_795_533_110_032.75;

describeEachDialect('whole numbers in integer columns', (getDb) => {
  beforeEach(async () => {
    await getDb().db.deleteFrom('users').execute();
  });

  const user = (id: string, createdAt: number) => ({
    id,
    name: id,
    token_hash: id,
    global_role: 'user' as const,
    created_at: createdAt,
    active: 1,
  });

  it('rounds a fractional time on insert, update and in a raw expression', async () => {
    const { db } = getDb();
    await db
      .insertInto('users')
      .values([user('a', FRACTIONAL_TIME), user('b', 5)])
      .execute();
    expect(await db.selectFrom('users').select(['id', 'created_at']).orderBy('id').execute()).toEqual([
      { id: 'a', created_at: 1_795_533_110_033 },
      { id: 'b', created_at: 5 },
    ]);

    await db.updateTable('users').set({ created_at: 10.4 }).where('id', '=', 'b').execute();
    // As the pipelines release a row: a bound value inside raw SQL.
    await db
      .updateTable('users')
      .set({
        created_at: sql`CASE WHEN created_at = 0 THEN 0 ELSE CAST(${FRACTIONAL_TIME - 1} AS BIGINT) END`,
      })
      .where('id', '=', 'a')
      .execute();
    expect(await db.selectFrom('users').select(['id', 'created_at']).orderBy('id').execute()).toEqual([
      { id: 'a', created_at: 1_795_533_110_032 },
      { id: 'b', created_at: 10 },
    ]);
  });

  it('keeps the fractions of fractional columns', async () => {
    const { db } = getDb();
    const instance: InstancesTable = {
      id: 'i',
      project_id: 'p',
      fleet_id: null,
      name: 'i',
      instance_num: 0,
      status: 'idle',
      unreachable: 0,
      termination_reason: null,
      termination_reason_message: null,
      created_at: 0.5,
      last_processed_at: 0,
      started_at: null,
      finished_at: null,
      backend: null,
      region: null,
      price: 1.25,
      offer: null,
      job_provisioning_data: null,
      requirements: null,
      instance_configuration: null,
      termination_idle_time: null,
      termination_deadline: null,
      provisioning_deadline: null,
      first_termination_retry_at: null,
      last_termination_retry_at: null,
      idle_since: null,
      total_blocks: 1,
      busy_blocks: 0,
      deleted: 0,
      lock_expires_at: null,
      lock_token: null,
      lock_owner: null,
    };
    await db.insertInto('instances').values(instance).execute();
    expect(await db.selectFrom('instances').select(['price', 'created_at']).executeTakeFirst()).toEqual({
      price: 1.25,
      created_at: 1,
    });
    await db.updateTable('instances').set({ price: 2.75, started_at: 3.5 }).execute();
    expect(await db.selectFrom('instances').select(['price', 'started_at']).executeTakeFirst()).toEqual({
      price: 2.75,
      started_at: 4,
    });
    await db.deleteFrom('instances').execute();
  });

  it('knows every fractional column of the schema', async () => {
    const { db, dialect } = getDb();
    const fractional =
      dialect === 'postgres'
        ? (
            await sql<{ name: string }>`
              select column_name as name from information_schema.columns
              where table_schema = current_schema() and data_type in ('real', 'double precision', 'numeric')`.execute(
              db,
            )
          ).rows
        : (
            await sql<{ name: string }>`
              select c.name from sqlite_master t, pragma_table_info(t.name) c
              where t.type = 'table' and upper(c.type) in ('REAL', 'DOUBLE', 'FLOAT', 'NUMERIC')`.execute(db)
          ).rows;
    expect(new Set(fractional.map((row) => row.name))).toEqual(FRACTIONAL_COLUMNS);
  });
});

it('passes a query that binds no fraction through unchanged', () => {
  // Kysely's transformer would rebuild every node of it: the pipelines' queries would pay for that.
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  const plugin = new WholeNumbersPlugin();
  const queries = [
    db.selectFrom('users').selectAll().where('created_at', '>', 5),
    db.updateTable('users').set({ created_at: 10 }).where('id', '=', 'a'),
    db
      .insertInto('users')
      .values({ id: 'a', name: 'a', token_hash: 'a', global_role: 'user', created_at: 5, active: 1 }),
    db.deleteFrom('users').where('created_at', '<', 5.5),
  ];
  for (const query of queries) {
    const node = query.toOperationNode();
    expect(plugin.transformQuery({ node, queryId: { queryId: 'q' } })).toBe(node);
  }
  const fractional = db.updateTable('users').set({ created_at: 10.4 }).toOperationNode();
  expect(plugin.transformQuery({ node: fractional, queryId: { queryId: 'q' } })).not.toBe(fractional);
});
