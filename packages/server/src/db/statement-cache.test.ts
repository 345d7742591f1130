import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withStatementCache } from './statement-cache.js';

describe('withStatementCache', () => {
  let connection: BetterSqlite3.Database;
  beforeEach(() => {
    connection = new BetterSqlite3(':memory:');
    connection.exec('create table t (id integer primary key, name text)');
  });
  afterEach(() => {
    if (connection.open) connection.close();
  });

  it('prepares each SQL text once and reuses the statement', () => {
    const prepare = vi.spyOn(connection, 'prepare');
    const cached = withStatementCache(connection);
    const insert = 'insert into t (name) values (?)';
    cached.prepare(insert).run(['a']);
    cached.prepare(insert).run(['b']);
    expect(cached.prepare('select name from t order by id').all([])).toEqual([{ name: 'a' }, { name: 'b' }]);
    expect(prepare).toHaveBeenCalledTimes(2);
  });

  it('evicts the least recently used statement beyond its capacity', () => {
    const prepare = vi.spyOn(connection, 'prepare');
    const cached = withStatementCache(connection, 2);
    cached.prepare('select 1');
    cached.prepare('select 2');
    cached.prepare('select 1');
    cached.prepare('select 3'); // evicts "select 2", the least recently used
    cached.prepare('select 1');
    cached.prepare('select 2');
    expect(prepare.mock.calls.map(([sql]) => sql)).toEqual(['select 1', 'select 2', 'select 3', 'select 2']);
  });

  it('closes the connection', () => {
    withStatementCache(connection).close();
    expect(connection.open).toBe(false);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => withStatementCache(connection, 0)).toThrow(/capacity: expected a positive integer, got 0/);
  });
});
