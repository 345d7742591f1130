/**
 * A replica whose probes failed after it was ready is replaced: stopped, and a new one started.
 * The stop can fail to take (a job pipeline holds the job at that moment); then nothing is
 * started beside it, and the failed replica is reported again on the next pass, probe due or not.
 */
import { randomUUID } from 'node:crypto';
import type { JobTerminationReason } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobsTable, RunsTable } from '../db/schema.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { FAILURES_TO_REPLACE } from './replica-probes.js';
import { keepServiceReplicas, type ReplicaJobs } from './service-scaling.js';

const probe = {
  type: 'http',
  url: '/health',
  method: 'get',
  headers: [],
  interval: 60,
  timeout: 1,
  ready_after: 1,
};

describe('replacing a replica whose probes failed', () => {
  let server: TestApp;
  let projectId: string;

  beforeAll(async () => {
    server = await createTestApp({ dialect: 'sqlite', routes: [] });
    const project = await server.app.db
      .selectFrom('projects')
      .select('id')
      .where('name', '=', 'main')
      .executeTakeFirstOrThrow();
    projectId = project.id;
  });

  afterAll(async () => {
    await server?.close();
  });

  /** A service run with one replica and a probe, as the run pipeline reads it. */
  function serviceRun(): RunsTable {
    const configuration = { type: 'service', port: 8000, commands: ['serve'], replicas: 1, probes: [probe] };
    return {
      id: randomUUID(),
      project_id: projectId,
      run_spec: JSON.stringify({ configuration }),
      deployment_num: 0,
    } as RunsTable;
  }

  /** A running replica that was ready and whose probe, not due again for a minute, has failed enough. */
  function failedReplica(run: RunsTable): JobsTable {
    const job = {
      id: randomUUID(),
      run_id: run.id,
      replica_num: 0,
      job_num: 0,
      submission_num: 0,
      deployment_num: 0,
      status: 'running',
      probes_ready: 0,
      job_spec_data: JSON.stringify({ replica_num: 0, job_num: 0 }),
    } as JobsTable;
    server.app.caches.services.probeStates.set(job.id, {
      successes: [0],
      nextAt: Date.now() + 60_000,
      wasReady: true,
      failures: FAILURES_TO_REPLACE,
    });
    return job;
  }

  /** Replica jobs whose stop takes or not, recording what was asked. */
  function replicaJobs(stopTakes: boolean) {
    const asked = { stopped: [] as Array<[string, JobTerminationReason]>, submitted: 0 };
    const jobs: ReplicaJobs = {
      stop: async (stopped, reason) => {
        for (const job of stopped) asked.stopped.push([job.id, reason]);
        return stopTakes;
      },
      submit: async (_run, replicas) => {
        asked.submitted += replicas.length;
      },
    };
    return { jobs, asked };
  }

  it('stops it and starts another in the same pass', async () => {
    const run = serviceRun();
    const replica = failedReplica(run);
    const { jobs, asked } = replicaJobs(true);
    await keepServiceReplicas(server.app, run, [replica], jobs);
    expect(asked).toEqual({ stopped: [[replica.id, 'scaled_down']], submitted: 1 });
  });

  it('starts nothing while its stop does not take, and stops it again on the next pass', async () => {
    const run = serviceRun();
    const replica = failedReplica(run);
    const refused = replicaJobs(false);
    const outcome = await keepServiceReplicas(server.app, run, [replica], refused.jobs);
    expect(refused.asked).toEqual({ stopped: [[replica.id, 'scaled_down']], submitted: 0 });
    expect(outcome?.nextPassInMs).toBeLessThan(1_000);

    const taken = replicaJobs(true);
    await keepServiceReplicas(server.app, run, [replica], taken.jobs);
    expect(taken.asked).toEqual({ stopped: [[replica.id, 'scaled_down']], submitted: 1 });
  });
});
