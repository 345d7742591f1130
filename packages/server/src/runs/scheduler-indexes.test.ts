/**
 * The job pipeline's per-pass reads must not grow with what the server keeps: on SQLite the
 * higher-priority runs come from `runs_project_id_status_priority_idx` (not every submitted job of
 * every project) and the instances a job may take from `instances_takeable_idx` (those with blocks free, not
 * every instance the project ever had). The claims read `*_status_due_idx`.
 */
import { type Compilable, CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeableInstancesQuery } from '../fleets/fleet-instance-offers.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.test.helpers.js';
import { higherPriorityRunsQuery } from './run-priority.js';

describe("the scheduler's reads on SQLite", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });
  afterAll(() => database.close());

  async function plan(query: Compilable): Promise<string> {
    const compiled = query.compile();
    const { rows } = await database.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
    );
    return rows.map((row) => row.detail).join('\n');
  }

  it('finds the runs of a higher priority by project, status and priority', async () => {
    const detail = await plan(higherPriorityRunsQuery(database.db, 'p', 0));
    expect(detail).toContain(
      'runs_project_id_status_priority_idx (project_id=? AND status=? AND priority>?)',
    );
  });

  it('finds the instances a job may take in the partial index of instances with blocks free', async () => {
    // Cheapest first straight from the index: no sort.
    expect(await plan(takeableInstancesQuery(database.db, 'f1'))).toBe(
      'SEARCH instances USING INDEX instances_takeable_idx (fleet_id=?)',
    );
  });

  it('keeps no index the claims no longer read', async () => {
    const names = await database.db
      .selectFrom('sqlite_master' as never)
      .select('name' as never)
      .where('type' as never, '=', 'index' as never)
      .execute();
    expect((names as Array<{ name: string }>).map((row) => row.name)).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/_pipeline_idx$/)]),
    );
  });
});
