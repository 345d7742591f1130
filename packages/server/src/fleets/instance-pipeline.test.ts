/**
 * The provisioning timeout: an instance that is not reachable before its
 * backend's provisioning timeout (dstack: 10 minutes unless the backend says
 * otherwise) is terminated (`provisioning_timeout`); its job fails with
 * `waiting_instance_limit_exceeded`, and the run fails, or is resubmitted when
 * its `retry` covers errors.
 */
import type { Compute } from '@dstack/core';
import type { FakeBackend } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createFakeBackendPipelineHarness,
  createPipelineHarness,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness | PipelineHarness<FakeBackend> | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Applies a task on an instance that never comes up; returns the run and its instance once provisioning. */
async function provisionUnreachable(h: PipelineHarness, fields: Record<string, unknown> = {}) {
  const run = await h.applyTask('never-up', { commands: ['true'], ...fields });
  await h.step('jobs-submitted');
  const [job] = await h.jobs(run.id);
  expect(job?.status).toBe('provisioning');
  const instance = await h.instance(job?.instance_id ?? null);
  expect(instance.status).toBe('provisioning');
  return { run, instance };
}

/** Steps the instance pipeline, then the jobs and the run, as the timeout plays out. */
async function playOutTimeout(h: PipelineHarness): Promise<void> {
  await h.step('instances');
  await h.step('jobs-running');
  await h.step('jobs-terminating');
  await h.step('instances');
  await h.step('runs');
}

describe('provisioning timeout', () => {
  it("uses dstack's 10 minutes when the backend sets no timeout", async () => {
    const h = await createPipelineHarness({ unreachable: true });
    harness = h;
    const { instance } = await provisionUnreachable(h);
    expect((instance.provisioning_deadline ?? 0) - (instance.started_at ?? 0)).toBe(600_000);
  });

  it("terminates an instance not reachable within its backend's timeout and fails the job", async () => {
    const h = await createPipelineHarness({ unreachable: true, provisioningTimeoutSeconds: 120 });
    harness = h;
    const { run, instance } = await provisionUnreachable(h);
    expect((instance.provisioning_deadline ?? 0) - (instance.started_at ?? 0)).toBe(120_000);

    // Before the deadline the instance is polled and stays provisioning.
    h.advance(119_000);
    const pollsBefore = h.backend.provisioningPolls;
    await h.step('instances', 'jobs-running');
    expect(h.backend.provisioningPolls).toBeGreaterThan(pollsBefore);
    expect((await h.instance(instance.id)).status).toBe('provisioning');
    expect((await h.jobs(run.id))[0]?.status).toBe('provisioning');

    h.advance(2_000);
    await playOutTimeout(h);
    expect(await h.instance(instance.id)).toMatchObject({
      status: 'terminated',
      termination_reason: 'provisioning_timeout',
      deleted: 1,
    });
    expect(h.backend.terminated).toEqual([JSON.parse(instance.job_provisioning_data ?? '{}').instance_id]);
    expect((await h.jobs(run.id))[0]).toMatchObject({
      status: 'failed',
      termination_reason: 'waiting_instance_limit_exceeded',
    });
    expect(await h.run(run.id)).toMatchObject({ status: 'terminating', termination_reason: 'job_failed' });
    await h.step('runs');
    expect((await h.run(run.id)).status).toBe('failed');
  });

  it('resubmits the job after the backoff when retry covers errors', async () => {
    const h = await createPipelineHarness({ unreachable: true, provisioningTimeoutSeconds: 60 });
    harness = h;
    const { run } = await provisionUnreachable(h, { retry: { on_events: ['error'], duration: '1h' } });
    h.advance(61_000);
    await playOutTimeout(h);
    const row = await h.run(run.id);
    expect(row).toMatchObject({ status: 'pending', resubmission_attempt: 1 });
    expect(row.next_triggered_at).toBe(h.now() + 15_000);
    h.advance(15_000);
    await h.step('runs');
    await h.step('jobs-submitted');
    const submissions = await h.jobs(run.id);
    expect(submissions.map((job) => [job.submission_num, job.status])).toEqual([
      [0, 'failed'],
      [1, 'provisioning'],
    ]);
    // The resubmission gets a new instance: the timed-out one is gone.
    expect(h.backend.provisioned).toHaveLength(2);
  });
});

describe('an instance coming up while its job stops', () => {
  it('comes up idle when the job freed its blocks during the pass', async () => {
    // Container instances answer as soon as they have a hostname: the pass that fills it brings them up.
    const h = await createFakeBackendPipelineHarness({ computeKind: 'container' });
    harness = h;
    const run = await h.applyTask('stopped-early', { commands: ['true'] });
    await h.step('jobs-submitted');
    const [job] = await h.jobs(run.id);
    expect(job?.status).toBe('provisioning');
    expect((await h.instance(job?.instance_id ?? null)).busy_blocks).toBe(1);
    // The job is stopped and freed while the instance pipeline polls the cloud for its hostname.
    const backends = h.app.backends;
    const projectBackends = backends.getProjectBackends.bind(backends);
    vi.spyOn(backends, 'getProjectBackends').mockImplementation(async (projectId) =>
      (await projectBackends(projectId)).map((backend) => {
        const compute: Compute = Object.create(backend.compute);
        compute.updateProvisioningData = async (...args) => {
          await h.app.db
            .updateTable('jobs')
            .set({ status: 'terminating', termination_reason: 'terminated_by_user', last_processed_at: 0 })
            .where('id', '=', job?.id ?? '')
            .execute();
          await h.step('jobs-terminating');
          return backend.compute.updateProvisioningData(...args);
        };
        return { ...backend, compute };
      }),
    );
    await h.step('instances');
    expect((await h.jobs(run.id))[0]?.status).toBe('terminated');
    expect(await h.instance(job?.instance_id ?? null)).toMatchObject({ status: 'idle', busy_blocks: 0 });
  });
});
