import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, parseDatabaseUrl } from './database.js';
import { migrateToLatest } from './migrations/index.js';

describe('parseDatabaseUrl', () => {
  it('defaults to SQLite in the server directory', () => {
    expect(parseDatabaseUrl(null, '/srv/d')).toEqual({
      dialect: 'sqlite',
      filename: '/srv/d/data/sqlite.db',
    });
  });

  it("accepts dstack's URL forms", () => {
    expect(parseDatabaseUrl('postgresql+asyncpg://u:p@h:5432/db', '/x')).toEqual({
      dialect: 'postgres',
      connectionString: 'postgresql://u:p@h:5432/db',
    });
    expect(parseDatabaseUrl('postgres://h/db', '/x').dialect).toBe('postgres');
    expect(parseDatabaseUrl('sqlite:///var/lib/d.db', '/x')).toEqual({
      dialect: 'sqlite',
      filename: '/var/lib/d.db',
    });
    expect(parseDatabaseUrl('sqlite+aiosqlite:///var/lib/d.db', '/x')).toEqual({
      dialect: 'sqlite',
      filename: '/var/lib/d.db',
    });
    expect(parseDatabaseUrl('sqlite::memory:', '/x')).toEqual({ dialect: 'sqlite', filename: ':memory:' });
  });

  it('rejects other URLs without echoing the password', () => {
    expect(() => parseDatabaseUrl('mysql://root:hunter2@h/db', '/x')).toThrow(
      /DSTACK_DATABASE_URL: unsupported database URL "mysql:\/\/root:\*\*\*@h\/db"/,
    );
  });
});

describe('openDatabase', () => {
  let directory: string | undefined;
  afterEach(() => {
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('creates the SQLite file under {serverDir}/data with WAL, NORMAL sync and foreign keys', async () => {
    directory = mkdtempSync(join(tmpdir(), 'dstack-db-'));
    const opened = await openDatabase({ url: null, serverDir: directory });
    try {
      await migrateToLatest(opened.db);
      expect(existsSync(join(directory, 'data', 'sqlite.db'))).toBe(true);
      const pragma = async (name: string) =>
        Object.values((await sql.raw(`PRAGMA ${name}`).execute(opened.db)).rows[0] as object)[0];
      expect(await pragma('journal_mode')).toBe('wal');
      // 1 = NORMAL: no fsync per commit (see openSqlite).
      expect(await pragma('synchronous')).toBe(1);
      // members.project_id references projects: a dangling row must be refused.
      await expect(
        opened.db
          .insertInto('members')
          .values({ project_id: 'nope', user_id: 'nope', project_role: 'user' })
          .execute(),
      ).rejects.toThrow(/FOREIGN KEY/);
    } finally {
      await opened.close();
    }
  });

  it('keeps the SQLite files to the server user: data/ 0700, the database and its -wal and -shm 0600', async () => {
    directory = mkdtempSync(join(tmpdir(), 'dstack-db-'));
    const serverDir = join(directory, 'server');
    const opened = await openDatabase({ url: null, serverDir });
    try {
      await migrateToLatest(opened.db);
      expect(statSync(serverDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(serverDir, 'data')).mode & 0o777).toBe(0o700);
      for (const file of ['sqlite.db', 'sqlite.db-wal', 'sqlite.db-shm']) {
        expect(statSync(join(serverDir, 'data', file)).mode & 0o777).toBe(0o600);
      }
    } finally {
      await opened.close();
    }
    // A database an older server left readable by all is closed to others at the next open.
    const readable = join(directory, 'old.db');
    writeFileSync(readable, '', { mode: 0o644 });
    chmodSync(readable, 0o644);
    const reopened = await openDatabase({ url: `sqlite://${readable}`, serverDir });
    await reopened.close();
    expect(statSync(readable).mode & 0o777).toBe(0o600);
  });

  it('names the variable when Postgres cannot be reached', async () => {
    await expect(
      openDatabase({ url: 'postgresql://nobody@127.0.0.1:1/none', serverDir: '/tmp' }),
    ).rejects.toThrow(
      /DSTACK_DATABASE_URL: cannot connect to Postgres at postgresql:\/\/nobody@127.0.0.1:1\/none/,
    );
  });
});
