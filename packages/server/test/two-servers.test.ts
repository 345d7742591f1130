/**
 * Two server processes' worth of state (each with its own connection pool,
 * pipelines and lock owner) on one Postgres database: every job must be
 * provisioned exactly once, whichever server claims it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createInstantBackend, type InstantBackend } from '../src/testing/instant-backend.js';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, task } from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const POSTGRES_URL = process.env.DSTACK_TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const schema = `t_two_servers_${process.pid}_${Date.now()}`;

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const reachable = await postgresReachable();
if (!reachable)
  console.warn(`Postgres not reachable at ${POSTGRES_URL}: set DSTACK_TEST_POSTGRES_URL; skipping`);

describe.skipIf(!reachable)('two servers on one Postgres', () => {
  const temp = makeTempDir();
  let backend: InstantBackend;
  const servers: HarnessServer[] = [];

  beforeAll(async () => {
    backend = await createInstantBackend({ homeDir: `${temp.dir}/shim` });
    const url = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const config = {
      projects: [{ name: 'main', backends: [{ type: 'instant', creds: { type: 'default' } }] }],
    };
    // Started one after the other: the second finds the schema migrated and the admin created.
    for (const name of ['a', 'b']) {
      servers.push(
        await startHarnessServer({
          dir: `${temp.dir}/${name}`,
          config,
          databaseUrl: url,
          plugins: [backend.plugin],
        }),
      );
    }
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await backend?.close();
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    temp.remove();
  });

  it('provisions each job once and runs every run to done', async () => {
    const [a, b] = servers as [HarnessServer, HarnessServer];
    const names = Array.from({ length: 24 }, (_, index) => `run-${index}`);
    await Promise.all(
      names.map((name, index) => applyTask(index % 2 === 0 ? a : b, task(name, ['echo ok']))),
    );
    for (const name of names) {
      const run = await (names.indexOf(name) % 2 === 0 ? b : a).waitForRun(
        name,
        ['done', 'failed', 'terminated'],
        90_000,
      );
      expect(run.status).toBe('done');
    }
    // Each provisioning call is for a distinct job: no job was provisioned by both servers.
    expect(new Set(backend.provisioned).size).toBe(backend.provisioned.length);
    const runs = (await a.call('/api/runs/list', { limit: 100 })).body as Array<{
      jobs: Array<{ job_submissions: unknown[] }>;
    }>;
    expect(runs).toHaveLength(24);
    for (const run of runs) expect(run.jobs[0]?.job_submissions).toHaveLength(1);
  });

  it('never grows a fleet past nodes.max while both servers place jobs in it', async () => {
    const [a, b] = servers as [HarnessServer, HarnessServer];
    const applied = await a.call('/api/project/main/fleets/apply', {
      plan: {
        spec: { configuration: { type: 'fleet', name: 'capped', nodes: { min: 0, target: 0, max: 2 } } },
      },
    });
    expect(applied.status).toBe(200);
    const launchedBefore = backend.provisioned.length;
    const names = Array.from({ length: 12 }, (_, index) => `capped-${index}`);
    await Promise.all(
      names.map((name, index) =>
        applyTask(index % 2 === 0 ? a : b, task(name, ['echo ok'], { fleets: ['capped'] })),
      ),
    );
    // Jobs that find the fleet full end with no capacity (as in dstack); the others run on its instances.
    for (const name of names) await a.waitForRun(name, ['done', 'failed', 'terminated'], 90_000);
    expect(backend.provisioned.length - launchedBefore).toBeLessThanOrEqual(2);
  });
});
