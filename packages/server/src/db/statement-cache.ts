/**
 * Kysely's SQLite driver prepares every statement anew, and preparing costs as
 * much as running the pipelines' small queries. This wrapper keeps the most
 * recently used prepared statements by SQL text, so each distinct query is
 * compiled by SQLite once.
 *
 * Reusing a statement is safe because Kysely runs one query at a time on its
 * single SQLite connection (a streamed query holds the connection until it ends).
 */
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** Distinct statements kept; SQL texts vary with the length of `IN (...)` lists, so the cache is bounded. */
export const DEFAULT_STATEMENT_CACHE_SIZE = 500;

export function withStatementCache(
  database: SqliteDatabase,
  capacity: number = DEFAULT_STATEMENT_CACHE_SIZE,
): SqliteDatabase {
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new RangeError(`capacity: expected a positive integer, got ${capacity}`);
  }
  const statements = new Map<string, SqliteStatement>();
  return {
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached) {
        // Map order is insertion order: move the hit to the end, so the first entry is the least recently used.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      statements.set(sql, statement);
      if (statements.size > capacity) {
        const oldest = statements.keys().next().value as string;
        statements.delete(oldest);
      }
      return statement;
    },
    close(): void {
      statements.clear();
      database.close();
    },
  };
}
