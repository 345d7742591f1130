/**
 * `runs/list`'s first page must not grow with the runs a project keeps: SQLite reads it in order
 * from `runs_project_id_submitted_at_idx` instead of sorting every run of the project (a temporary
 * B-tree), which the scale bench showed at thousands of runs.
 */
import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.test.helpers.js';
import { runsListQuery } from './run-reads.js';

describe("runs/list's page query on SQLite", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });
  afterAll(() => database.close());

  async function plan(options: Parameters<typeof runsListQuery>[1]): Promise<string> {
    const compiled = runsListQuery(database.db, options).limit(100).compile();
    const { rows } = await database.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
    );
    return rows.map((row) => row.detail).join('\n');
  }

  it.each([
    ['newest first', { ascending: false }],
    ['oldest first, past a cursor', { ascending: true, prevSubmittedAt: 1, prevRunId: 'x' }],
  ])('reads one project %s from the index, without sorting', async (_name, order) => {
    const detail = await plan({ projectIds: ['p'], onlyActive: false, limit: 100, ...order });
    expect(detail).toContain('runs_project_id_submitted_at_idx');
    expect(detail).not.toContain('TEMP B-TREE');
  });
});
