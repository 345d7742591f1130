/**
 * Opens the server database: SQLite (default, a file under the server directory)
 * or Postgres (`DSTACK_DATABASE_URL`). Both dialects return the same JS values
 * (numbers for integer columns, strings for text), so queries are dialect-independent.
 */
import { dirname, join } from 'node:path';
import { ConfigurationError } from '@dstack/core';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely } from 'kysely';
import pg from 'pg';
import type { SqlDialect } from '../context.js';
import {
  ensureOwnerOnlyFile,
  makeOwnerOnlyDirectory,
  restrictToOwner,
} from '../security/owner-only-files.js';
import { type WorkKind, YieldingSqliteConnection } from './background-work.js';
import { OwnSchemaPostgresDialect } from './own-schema-postgres-dialect.js';
import type { Database } from './schema.js';
import { withStatementCache } from './statement-cache.js';
import { WholeNumbersPlugin } from './whole-numbers.js';

export interface OpenDatabaseOptions {
  /**
   * `DSTACK_DATABASE_URL`: `postgresql://…`, `postgres://…`, dstack's `postgresql+asyncpg://…`,
   * `sqlite:///absolute/path.db` or `sqlite::memory:`. Null: SQLite at `{serverDir}/data/sqlite.db`.
   */
  url: string | null;
  /** The server directory (`DSTACK_SERVER_DIR`), for the default SQLite file. */
  serverDir: string;
  /** Postgres only: the schema to use (`search_path`), default the server's default (`public`). */
  postgresSchema?: string;
  /** Postgres only: connections in the pool, default 10. */
  postgresPoolSize?: number;
}

export interface OpenedDatabase {
  db: Kysely<Database>;
  /**
   * The handle background work (the pipelines) queries through: on SQLite its queries yield the
   * event loop to requests' (background-work.ts); on Postgres it is `db`.
   */
  backgroundDb: Kysely<Database>;
  dialect: SqlDialect;
  /** Closes every connection; the `db` cannot be used afterwards. */
  close(): Promise<void>;
}

/** Where the database is, parsed from the URL. */
export type DatabaseLocation =
  | { dialect: 'sqlite'; filename: string }
  | { dialect: 'postgres'; connectionString: string };

const INT8_OID = 20;

/** Parses a database URL; throws ConfigurationError naming `DSTACK_DATABASE_URL` when it is not one. */
export function parseDatabaseUrl(url: string | null, serverDir: string): DatabaseLocation {
  if (url === null || url === '') {
    return { dialect: 'sqlite', filename: join(serverDir, 'data', 'sqlite.db') };
  }
  const scheme = /^([a-z0-9]+)(\+[a-z0-9]+)?:/i.exec(url);
  const base = scheme?.[1]?.toLowerCase();
  if (base === 'postgresql' || base === 'postgres') {
    // dstack's URLs name the Python driver (`+asyncpg`); node-postgres does not understand it.
    return { dialect: 'postgres', connectionString: url.replace(/^([a-z0-9]+)\+[a-z0-9]+:/i, '$1:') };
  }
  if (base === 'sqlite') {
    const rest = url.slice(scheme![0].length);
    if (rest === ':memory:' || rest === '///:memory:') return { dialect: 'sqlite', filename: ':memory:' };
    if (rest.startsWith('///')) return { dialect: 'sqlite', filename: rest.slice(2) };
    if (rest.startsWith('//')) return { dialect: 'sqlite', filename: rest.slice(2) };
    if (rest.length > 0) return { dialect: 'sqlite', filename: rest };
  }
  throw new ConfigurationError(
    `DSTACK_DATABASE_URL: unsupported database URL "${redactPassword(url)}"; expected postgresql://user@host:5432/db or sqlite:///path/to/file.db`,
  );
}

/** The URL without its password, for messages and logs. */
export function redactPassword(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@/]*@/, '$1***@');
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<OpenedDatabase> {
  const location = parseDatabaseUrl(options.url, options.serverDir);
  if (location.dialect === 'sqlite') return openSqlite(location.filename);
  return openPostgres(location.connectionString, options);
}

function openSqlite(filename: string): OpenedDatabase {
  if (filename !== ':memory:') {
    // The file holds creds and SSH keys. SQLite makes -wal and -shm with the database's mode.
    makeOwnerOnlyDirectory(dirname(filename));
    ensureOwnerOnlyFile(filename);
    for (const companion of [`${filename}-wal`, `${filename}-shm`]) restrictToOwner(companion);
  }
  const connection = new BetterSqlite3(filename);
  connection.pragma('journal_mode = WAL');
  // In WAL mode NORMAL keeps the database consistent through crashes and power loss; it only
  // skips the fsync of every commit (a power cut may lose the last commits, a process crash
  // loses none). FULL's fsync per commit blocks the event loop: SQLite calls are synchronous.
  connection.pragma('synchronous = NORMAL');
  // A checkpoint (copying the log back into the file) is the one write NORMAL syncs, and it ran
  // in the commit that crossed SQLite's 1,000 pages: under the pipelines' load, a quarter of a
  // run's commit time. Every 10,000 pages (about 40 MB of log) there are a tenth as many, and
  // pages written again and again (the pipelines' indexes) are copied back once per checkpoint.
  connection.pragma('wal_autocheckpoint = 10000');
  // The log file is reused after a checkpoint; past this size it is truncated back to it.
  connection.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  connection.pragma('busy_timeout = 5000');
  connection.pragma('foreign_keys = ON');
  // Background work yields to requests between its queries (see background-work.ts).
  const shared = new YieldingSqliteConnection({ database: withStatementCache(connection) });
  const handle = (kind: WorkKind) =>
    new Kysely<Database>({ dialect: shared.dialectFor(kind), plugins: [new WholeNumbersPlugin()] });
  const db = handle('request');
  return { db, backgroundDb: handle('background'), dialect: 'sqlite', close: () => db.destroy() };
}

async function openPostgres(connectionString: string, options: OpenDatabaseOptions): Promise<OpenedDatabase> {
  const pool = new pg.Pool({
    connectionString,
    max: options.postgresPoolSize ?? 10,
    ...(options.postgresSchema ? { options: `-c search_path=${options.postgresSchema}` } : {}),
    // BIGINT columns hold millisecond times: return them as numbers, as SQLite does.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', (error) => console.error(`[dstack-server] Postgres pool error: ${error.message}`));
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end();
    throw new ConfigurationError(
      `DSTACK_DATABASE_URL: cannot connect to Postgres at ${redactPassword(connectionString)}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const db = new Kysely<Database>({
    dialect: new OwnSchemaPostgresDialect({ pool }),
    plugins: [new WholeNumbersPlugin()],
  });
  return { db, backgroundDb: db, dialect: 'postgres', close: () => db.destroy() };
}
