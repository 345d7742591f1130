/**
 * One server per SQLite database. Two servers on one file would both run the pipelines, and
 * each releases every claim at start (a SQLite server assumes claims it finds are a dead
 * predecessor's): the second would take over the first's rows mid-work.
 *
 * The lock is an exclusive SQLite transaction held open on a file beside the database
 * (`sqlite.db.server-lock`) for the server's lifetime: SQLite's file locks serialise
 * processes and connections of one process alike, and the operating system drops them when
 * the process dies however it dies, so a crash never leaves a stale lock behind (no pid file
 * to check, no pid reuse to fear).
 */
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { ensureOwnerOnlyFile, makeOwnerOnlyDirectory } from '../security/owner-only-files.js';
import { ServerStartError } from '../server-start-error.js';

export interface SqliteServerLock {
  /** The lock file. */
  readonly path: string;
  /** Gives the database up to the next server. Idempotent. */
  release(): void;
}

/** Takes the database at `filename` for this server; throws ServerStartError when another server has it. */
export function lockSqliteDatabase(filename: string): SqliteServerLock {
  const path = `${filename}.server-lock`;
  // The data directory holds the database's secrets: created for the server's user only.
  makeOwnerOnlyDirectory(dirname(path));
  ensureOwnerOnlyFile(path);
  // No busy timeout: a held lock is another live server, not a moment's contention.
  const connection = new BetterSqlite3(path, { timeout: 0 });
  try {
    connection.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    connection.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') {
      throw new ServerStartError(
        `the SQLite database ${filename} is in use by another dstack server (${path} is locked)`,
        { cause: error },
      );
    }
    throw error;
  }
  return {
    path,
    release() {
      if (connection.open) connection.close();
    },
  };
}
