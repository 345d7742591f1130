/**
 * `retry`: a run whose job failed on one of `retry.on_events` goes back to
 * pending and is resubmitted after dstack's backoff (15s, 30s, 1m, 2m, 5m,
 * then 10m), as long as `retry.duration` has not passed since the job's last submission that
 * got an instance failed (since the run was submitted, when none ever got one), as in dstack.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { retryDelayMs } from './run-pipeline.js';

// Real agents start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** The instant backend has no GPU: a job that asks for one finds no capacity. */
const NO_CAPACITY_TASK = { commands: ['true'], resources: { gpu: 1 } };

let harness: PipelineHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Moves the job that found no capacity to its final status, and lets the run follow it. */
async function failForNoCapacity(h: PipelineHarness): Promise<void> {
  await h.step('jobs-submitted');
  await h.step('jobs-terminating');
  await h.step('runs');
}

describe('retryDelayMs', () => {
  it("follows dstack's backoff: 15s, 30s, 1m, 2m, 5m, then 10m", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 20].map(retryDelayMs)).toEqual([
      15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 600_000, 600_000,
    ]);
  });
});

describe('run retry', () => {
  it('resubmits a run that found no capacity after the backoff, backing off further each time', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('wants-gpu', {
      ...NO_CAPACITY_TASK,
      retry: { on_events: ['no-capacity'], duration: '1h' },
    });

    await failForNoCapacity(h);
    const [first] = await h.jobs(run.id);
    expect(first).toMatchObject({
      status: 'failed',
      termination_reason: 'failed_to_start_due_to_no_capacity',
    });
    let row = await h.run(run.id);
    expect(row).toMatchObject({ status: 'pending', resubmission_attempt: 1 });
    expect(row.next_triggered_at).toBe(h.now() + 15_000);

    // Before the backoff is over nothing is resubmitted.
    h.advance(14_000);
    await h.step('runs');
    expect(await h.jobs(run.id)).toHaveLength(1);
    expect((await h.run(run.id)).status).toBe('pending');

    h.advance(1_000);
    await h.step('runs');
    const submissions = await h.jobs(run.id);
    expect(submissions.map((job) => [job.submission_num, job.status])).toEqual([
      [0, 'failed'],
      [1, 'submitted'],
    ]);
    expect((await h.run(run.id)).status).toBe('submitted');

    // The second failure waits twice as long.
    await failForNoCapacity(h);
    row = await h.run(run.id);
    expect(row).toMatchObject({ status: 'pending', resubmission_attempt: 2 });
    expect(row.next_triggered_at).toBe(h.now() + 30_000);
  });

  it('stops retrying once retry.duration has passed since the run was submitted', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('short-retry', {
      ...NO_CAPACITY_TASK,
      retry: { on_events: ['no-capacity'], duration: '20s' },
    });
    await failForNoCapacity(h);
    expect((await h.run(run.id)).status).toBe('pending');
    h.advance(15_000);
    await h.step('runs');
    expect(await h.jobs(run.id)).toHaveLength(2);

    // 21 s after submission the second failure is past the 20 s of retrying.
    h.advance(6_000);
    await failForNoCapacity(h);
    expect(await h.run(run.id)).toMatchObject({
      status: 'terminating',
      termination_reason: 'retry_limit_exceeded',
    });
    await h.step('runs');
    expect((await h.run(run.id)).status).toBe('failed');
    expect(await h.jobs(run.id)).toHaveLength(2);
  });

  it('does not retry a failure whose event is not in retry.on_events', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('other-event', {
      ...NO_CAPACITY_TASK,
      retry: { on_events: ['interruption', 'error'], duration: '1h' },
    });
    await failForNoCapacity(h);
    expect(await h.run(run.id)).toMatchObject({ status: 'terminating', termination_reason: 'job_failed' });
    await h.step('runs');
    expect((await h.run(run.id)).status).toBe('failed');
  });

  it('retries an interruption (interrupted_by_no_capacity)', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('spot-lost', {
      commands: ['true'],
      retry: { on_events: ['interruption'], duration: '1h' },
    });
    // Nothing here interrupts an instance: the job is put in the state an interruption leaves.
    await h.app.db
      .updateTable('jobs')
      .set({
        status: 'failed',
        termination_reason: 'interrupted_by_no_capacity',
        finished_at: h.now(),
        job_provisioning_data: '{}',
      })
      .where('run_id', '=', run.id)
      .execute();
    await h.app.db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', run.id).execute();
    await h.step('runs');
    const row = await h.run(run.id);
    expect(row).toMatchObject({ status: 'pending', resubmission_attempt: 1 });
    expect(row.next_triggered_at).toBe(h.now() + 15_000);
  });

  it('counts retry.duration from the failure of a job that ran, not from the run submission (as dstack)', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('long-job', {
      commands: ['true'],
      retry: { on_events: ['interruption'], duration: '1h' },
    });
    await h.step('jobs-submitted');
    expect((await h.jobs(run.id))[0]?.status).toBe('provisioning');
    // The job ran for two hours, longer than retry.duration, before its spot instance was lost.
    h.advance(2 * 3_600_000);
    await h.app.db
      .updateTable('jobs')
      .set({ status: 'failed', termination_reason: 'interrupted_by_no_capacity', finished_at: h.now() })
      .where('run_id', '=', run.id)
      .execute();
    await h.app.db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', run.id).execute();
    await h.step('runs');
    expect(await h.run(run.id)).toMatchObject({ status: 'pending', resubmission_attempt: 1 });
  });

  it('stops retrying once retry.duration has passed since the job that ran failed', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('lost-for-long', {
      ...NO_CAPACITY_TASK,
      retry: { on_events: ['interruption', 'no-capacity'], duration: '1h' },
    });
    // The first submission ran and was interrupted; no capacity was found for it since.
    await h.app.db
      .updateTable('jobs')
      .set({
        status: 'failed',
        termination_reason: 'interrupted_by_no_capacity',
        finished_at: h.now(),
        job_provisioning_data: '{}',
      })
      .where('run_id', '=', run.id)
      .execute();
    await h.app.db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', run.id).execute();
    await h.step('runs');
    h.advance(3_601_000);
    await h.step('runs');
    await failForNoCapacity(h);
    expect(await h.jobs(run.id)).toHaveLength(2);
    expect(await h.run(run.id)).toMatchObject({
      status: 'terminating',
      termination_reason: 'retry_limit_exceeded',
    });
  });

  it('starts the backoff over once a resubmission gets an instance (as dstack)', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('interrupted-often', {
      commands: ['true'],
      retry: { on_events: ['interruption'], duration: '1h' },
    });
    // Three earlier submissions were interrupted; this one got an instance again.
    await h.app.db.updateTable('runs').set({ resubmission_attempt: 3 }).where('id', '=', run.id).execute();
    await h.step('jobs-submitted');
    expect((await h.jobs(run.id))[0]?.status).toBe('provisioning');
    await h.step('runs');
    expect(await h.run(run.id)).toMatchObject({ status: 'provisioning', resubmission_attempt: 0 });
  });

  it('resubmits a multi-node task once the nodes it stopped for the retry have ended', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('cluster', {
      commands: ['true'],
      nodes: 2,
      retry: { on_events: ['error'], duration: '1h' },
    });
    const [master, worker] = await h.jobs(run.id);
    // The master failed while the worker still runs.
    await h.app.db
      .updateTable('jobs')
      .set({
        status: 'failed',
        termination_reason: 'container_exited_with_error',
        finished_at: h.now(),
        job_provisioning_data: '{}',
      })
      .where('id', '=', master?.id ?? '')
      .execute();
    await h.app.db
      .updateTable('jobs')
      .set({ status: 'running', job_provisioning_data: '{}' })
      .where('id', '=', worker?.id ?? '')
      .execute();
    await h.app.db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', run.id).execute();
    await h.step('runs');
    expect((await h.jobs(run.id))[1]).toMatchObject({
      status: 'terminating',
      termination_reason: 'terminated_by_server',
    });
    await h.step('jobs-terminating');
    expect((await h.jobs(run.id))[1]?.status).toBe('terminated');
    h.advance(1_000);
    await h.step('runs');
    expect(await h.run(run.id)).toMatchObject({ status: 'pending', resubmission_attempt: 1 });
  });

  it('retries on error: a command that fails through the real agents is resubmitted', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('flaky', {
      commands: ['exit 3'],
      retry: { on_events: ['error'], duration: '1h' },
    });
    await h.stepUntil(async () => (await h.run(run.id)).status === 'pending');
    const [failed] = await h.jobs(run.id);
    expect(failed).toMatchObject({
      status: 'failed',
      termination_reason: 'container_exited_with_error',
      exit_status: 3,
    });
    const row = await h.run(run.id);
    expect(row.resubmission_attempt).toBe(1);
    // The backoff counts from the failure the run pipeline saw: the clock has moved since.
    expect(row.next_triggered_at).toBeGreaterThan(h.now());
    await h.stepUntil(async () => (await h.jobs(run.id)).length === 2);
    expect((await h.jobs(run.id))[1]?.submission_num).toBe(1);
  });
});

/** The run's status changes, as its events word them, in order. */
async function runStatusEvents(h: PipelineHarness, runId: string): Promise<string[]> {
  const rows = await h.app.db
    .selectFrom('events')
    .innerJoin('event_targets', 'event_targets.event_id', 'events.id')
    .select('events.message')
    .where('event_targets.entity_id', '=', runId)
    .where('events.message', 'like', 'Run status changed%')
    .orderBy('events.recorded_at')
    .execute();
  return rows.map((row) => row.message);
}

/** Every pipeline a run's job goes through, not the runs'. */
const JOB_PIPELINES = ['jobs-submitted', 'jobs-running', 'jobs-terminating', 'instances'] as const;

describe('a run follows its job', () => {
  it("without a pass of its own: a run of one job is moved by its job's passes, and ends in one pass", async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('quick', { commands: ['true'] });
    await h.step('jobs-submitted');
    expect((await h.jobs(run.id))[0]?.status).toBe('provisioning');
    expect(await h.run(run.id)).toMatchObject({
      status: 'provisioning',
      last_processed_at: run.last_processed_at,
    });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'done', { pipelines: JOB_PIPELINES });
    // The job's end is the run's to decide (retries, schedules): it is due for that one pass.
    expect((await h.run(run.id)).status).toBe('running');
    expect(await h.step('runs')).toBe(1);
    expect(await h.run(run.id)).toMatchObject({ status: 'done', termination_reason: 'all_jobs_done' });
    expect(await runStatusEvents(h, run.id)).toEqual([
      'Run status changed SUBMITTED -> PROVISIONING',
      'Run status changed PROVISIONING -> RUNNING',
      'Run status changed RUNNING -> TERMINATING. Termination reason: ALL_JOBS_DONE',
      'Run status changed TERMINATING -> DONE',
    ]);
  });

  it('through its own pass when a run pass holds it', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('held', { commands: ['true'] });
    // Another server's run pass holds the run while the job is placed.
    await h.app.db
      .updateTable('runs')
      .set({ lock_token: 'other', lock_owner: 'other', lock_expires_at: h.now() + 60_000 })
      .where('id', '=', run.id)
      .execute();
    await h.step('jobs-submitted');
    expect((await h.jobs(run.id))[0]?.status).toBe('provisioning');
    expect(await h.run(run.id)).toMatchObject({ status: 'submitted', last_processed_at: 0 });
    h.advance(61_000);
    await h.step('runs');
    expect((await h.run(run.id)).status).toBe('provisioning');
  });
});
