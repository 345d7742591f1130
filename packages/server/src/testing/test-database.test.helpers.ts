/**
 * Real databases for tests: a temporary SQLite file, or a fresh Postgres schema
 * (dropped afterwards). `describeEachDialect` runs one suite on both.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { SqlDialect } from '../context.js';
import { openDatabase, redactPassword } from '../db/database.js';
import { migrateToLatest } from '../db/migrations/index.js';
import type { Database } from '../db/schema.js';

/** `DSTACK_TEST_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`. */
export function getTestPostgresUrl(): string {
  return process.env.DSTACK_TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
}

export interface TestDatabase {
  db: Kysely<Database>;
  dialect: SqlDialect;
  /** A URL that opens the same database (for Postgres, together with `postgresSchema`). */
  url: string;
  /** Postgres: the suite's own schema; pass it to `openDatabase` to open a second connection. */
  postgresSchema: string | undefined;
  /** The temporary directory of the SQLite file (also usable as a server directory). */
  directory: string;
  /** Closes the connections and removes the file or schema. */
  close(): Promise<void>;
}

let postgresReachable: Promise<string | null> | undefined;

/**
 * Null when Postgres answers, otherwise why not, for the Postgres half of a suite to be skipped
 * with (cached per process). Under CI (`CI=true`) an unreachable Postgres rejects instead: CI
 * must run that half, and a skip would keep a Postgres-only failure green.
 */
export function checkPostgresReachable(): Promise<string | null> {
  postgresReachable ??= (async () => {
    const client = new pg.Client({ connectionString: getTestPostgresUrl(), connectionTimeoutMillis: 3000 });
    let unreachable: string | null = null;
    try {
      await client.connect();
      await client.query('select 1');
    } catch (error) {
      unreachable = `Postgres not reachable at ${redactPassword(getTestPostgresUrl())} (${(error as Error).message}): set DSTACK_TEST_POSTGRES_URL`;
    } finally {
      await client.end().catch(() => {});
    }
    if (unreachable && process.env.CI === 'true') {
      throw new Error(`${unreachable} (CI=true: the Postgres tests must run, not be skipped)`);
    }
    return unreachable;
  })();
  return postgresReachable;
}

async function withAdminClient<T>(action: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: getTestPostgresUrl() });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/**
 * A fresh, empty database of `dialect`. With `migrate` (default true) the
 * migrations are applied.
 */
export async function createTestDatabase(
  dialect: SqlDialect,
  options: { migrate?: boolean } = {},
): Promise<TestDatabase> {
  const directory = mkdtempSync(join(tmpdir(), 'dstack-test-db-'));
  if (dialect === 'sqlite') {
    const url = `sqlite://${join(directory, 'sqlite.db')}`;
    const opened = await openDatabase({ url, serverDir: directory });
    if (options.migrate !== false) await migrateToLatest(opened.db, 'sqlite');
    return {
      ...opened,
      url,
      postgresSchema: undefined,
      directory,
      async close() {
        await opened.close();
        rmSync(directory, { recursive: true, force: true });
      },
    };
  }
  const unreachable = await checkPostgresReachable();
  if (unreachable) throw new Error(unreachable);
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await withAdminClient((client) => client.query(`CREATE SCHEMA ${schema}`));
  const url = getTestPostgresUrl();
  const opened = await openDatabase({ url, serverDir: directory, postgresSchema: schema });
  if (options.migrate !== false) await migrateToLatest(opened.db, 'postgres');
  return {
    ...opened,
    url,
    postgresSchema: schema,
    directory,
    async close() {
      await opened.close();
      await withAdminClient((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `suite` once per dialect, each with its own migrated database shared by
 * the suite's tests. When Postgres is not reachable, the Postgres variant holds
 * one skipped test whose title says why (outside CI; see `checkPostgresReachable`).
 */
export function describeEachDialect(
  title: string,
  suite: (getDb: () => TestDatabase) => void,
  options: { migrate?: boolean } = {},
): void {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    // vitest awaits an async describe factory while collecting, so the skip is decided up front.
    describe(`${title} [${dialect}]`, async () => {
      if (dialect === 'postgres') {
        const unreachable = await checkPostgresReachable();
        if (unreachable) {
          it.skip(unreachable, () => {});
          return;
        }
      }
      let database: TestDatabase | undefined;
      beforeAll(async () => {
        database = await createTestDatabase(dialect, options);
      });
      afterAll(async () => {
        await database?.close();
      });
      suite(() => {
        if (!database) throw new Error(`The ${dialect} test database is not open`);
        return database;
      });
    });
  }
}
