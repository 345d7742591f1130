/**
 * End to end: a backend that runs jobs on the server's own host (the local backend) is for
 * global admins only. A plain user who creates a project must not get it, by the API, by
 * config.yml or by a row an older server stored, or any user could run commands as the server.
 */
import { join } from 'node:path';
import type { ApiError, Fleet, Run, RunPlan } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureDefaultLocalFleets } from '../src/fleets/fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

import {
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
} from './server-harness.js';

const PROJECT = 'bobs';

describe('the local backend in a project owned by a plain user', () => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  let bob: string;

  beforeAll(async () => {
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
    bob = await harness.createUser('bob');
    const created = await harness.call('/api/projects/create', { project_name: PROJECT }, bob);
    expect(created.status).toBe(200);
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  const localBackend = () => ({ type: 'local', instances_dir: join(temp.dir, 'bobs-instances') });

  it('is refused with 403 when the plain user adds it, and their task does not run on the host', async () => {
    const created = await harness.call<ApiError>(
      `/api/project/${PROJECT}/backends/create`,
      localBackend(),
      bob,
    );
    expect(created.status).toBe(403);
    expect(created.body.detail[0]?.msg).toMatch(/only global admins.*"local".*server's own host/i);

    // What the user was after: a task reading the server's database on the host.
    const apply = await harness.call<Run>(
      `/api/project/${PROJECT}/runs/apply`,
      {
        plan: {
          run_spec: { configuration: task('steal', [`cat ${join(temp.dir, 'data', 'sqlite.db')} | wc -c`]) },
        },
      },
      bob,
    );
    expect(apply.status).toBe(200);
    let run: Run | undefined;
    for (let attempt = 0; attempt < 600; attempt++) {
      run = (await harness.call<Run>(`/api/project/${PROJECT}/runs/get`, { run_name: 'steal' }, bob)).body;
      if (['done', 'failed', 'terminated'].includes(run.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(run?.status).toBe('failed');
    expect(run?.latest_job_submission?.instance_name ?? null).toBeNull();
  });

  it('is refused with 403 on update too', async () => {
    const updated = await harness.call<ApiError>(
      `/api/project/${PROJECT}/backends/update`,
      localBackend(),
      bob,
    );
    expect(updated.status).toBe(403);
    expect(updated.body.detail[0]?.msg).toMatch(/only global admins/i);
  });

  it("is refused with 403 when a global admin adds it to the plain user's project", async () => {
    const created = await harness.call<ApiError>(`/api/project/${PROJECT}/backends/create`, localBackend());
    expect(created.status).toBe(403);
    expect(created.body.detail[0]?.msg).toMatch(
      /project "bobs" is owned by "bob", who is not a global admin/,
    );
  });

  it('stays unusable when an older server stored it: no offers, no default fleet, an error in the listing', async () => {
    const app = harness.server.app;
    const project = await app.db
      .selectFrom('projects')
      .select('id')
      .where('name', '=', PROJECT)
      .executeTakeFirstOrThrow();
    await app.db.deleteFrom('backends').where('project_id', '=', project.id).execute();
    await app.db
      .insertInto('backends')
      .values({
        id: 'legacy-local',
        project_id: project.id,
        type: 'local',
        config: JSON.stringify(localBackend()),
        auth: app.encryption.encrypt('{"type":"none"}'),
        created_at: Date.now(),
      })
      .execute();
    app.backends.invalidate(project.id);
    await ensureDefaultLocalFleets(app);

    const fleets = await harness.call<Fleet[]>(`/api/project/${PROJECT}/fleets/list`, {}, bob);
    expect(fleets.body.map((fleet) => fleet.name)).toEqual([]);
    const plan = await harness.call<RunPlan>(
      `/api/project/${PROJECT}/runs/get_plan`,
      { run_spec: { configuration: task('steal-again', ['true']) } },
      bob,
    );
    expect(plan.status).toBe(200);
    expect(plan.body.job_plans[0]?.offers).toEqual([]);
    const listed = await harness.call<Array<{ name: string; error?: string }>>(
      `/api/project/${PROJECT}/backends/list`,
      {},
      bob,
    );
    expect(listed.body.find((backend) => backend.name === 'local')?.error).toMatch(/not a global admin/);
  });

  it("still runs the admin's own project on the local backend", async () => {
    const plan = await harness.call<RunPlan>('/api/project/main/runs/get_plan', {
      run_spec: { configuration: task('mine', ['true']) },
    });
    expect(plan.body.job_plans[0]?.offers.length).toBeGreaterThan(0);
  });
});
