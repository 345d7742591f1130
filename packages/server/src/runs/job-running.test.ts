/**
 * `max_duration`: a running job past it is stopped by the server with dstack's
 * reason `max_duration_exceeded` (final status terminated), and the run ends
 * failed (job_failed), as in dstack.
 */
import type { JobProvisioningData, RunSpec } from '@dstack/core';
import { RunnerClient } from '@dstack/runner';
import { ShimClient } from '@dstack/shim';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jobProvisioningDataOf, jobSpecOf, runSpecOf, type StoredRunSpec } from '../db/json-columns.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { inactivityDurationOf, pullIntervalMs } from './job-following.js';
import { hostJobCommands } from './job-specs.js';
import { applyRun } from './runs.js';

// Real agents start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('max_duration', () => {
  it('terminates a running job once max_duration has passed since it was submitted', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('long', { commands: ['echo started', 'sleep 120'], max_duration: '2m' });
    const submittedAt = run.submitted_at;
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'running');

    // Still inside max_duration: the job is pulled and keeps running.
    h.advance(submittedAt + 119_000 - h.now());
    await h.step('jobs-running');
    expect((await h.jobs(run.id))[0]?.status).toBe('running');

    // Its next pull: a job nobody follows is pulled every 5 s at that age.
    h.advance(5_000);
    await h.step('jobs-running');
    const [job] = await h.jobs(run.id);
    expect(job).toMatchObject({
      status: 'terminating',
      termination_reason: 'max_duration_exceeded',
      termination_reason_message: 'max_duration 120s exceeded',
    });

    // The runner stops the command (SIGTERM); the job ends terminated and the run failed.
    await h.stepUntil(async () => ['failed', 'terminated', 'done'].includes((await h.run(run.id)).status));
    expect((await h.jobs(run.id))[0]).toMatchObject({
      status: 'terminated',
      termination_reason: 'max_duration_exceeded',
    });
    expect(await h.run(run.id)).toMatchObject({ status: 'failed', termination_reason: 'job_failed' });
  });

  it('lets a job without max_duration run on', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('unbounded', { commands: ['sleep 120'] });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'running');
    h.advance(24 * 3_600_000);
    await h.step('jobs-running');
    expect((await h.jobs(run.id))[0]?.status).toBe('running');
  });
});

/** Applies a dev environment as the admin in project `main`; returns its run's id. */
async function applyDevEnvironment(
  h: PipelineHarness,
  fields: Record<string, unknown> = {},
): Promise<string> {
  const spec = {
    configuration: { type: 'dev-environment', name: 'dev', ...fields },
  } as unknown as RunSpec;
  return (await applyRun(h.app, h.project, h.admin, spec)).id;
}

describe('inactivity_duration', () => {
  it('terminates a dev environment once its runner reports no SSH connection for that long', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const runId = await applyDevEnvironment(h, { inactivity_duration: '1h' });
    await h.stepUntil(async () => (await h.jobs(runId))[0]?.status === 'running');

    // The runner counts from the job's start (the clock is shared): half an hour is not enough.
    h.advance(30 * 60_000);
    await h.step('jobs-running');
    const [halfway] = await h.jobs(runId);
    expect(halfway?.status).toBe('running');
    expect(halfway?.inactivity_secs).toBeGreaterThanOrEqual(30 * 60);
    expect(halfway?.inactivity_secs).toBeLessThan(60 * 60);

    h.advance(31 * 60_000);
    await h.step('jobs-running');
    const [job] = await h.jobs(runId);
    expect(job).toMatchObject({ status: 'terminating', termination_reason: 'inactivity_duration_exceeded' });
    expect(job?.inactivity_secs).toBeGreaterThanOrEqual(60 * 60);
    expect(job?.termination_reason_message).toBe(
      `The job was inactive for ${job?.inactivity_secs} seconds, exceeding the inactivity_duration of 3600 seconds`,
    );

    await h.stepUntil(async () => (await h.jobs(runId))[0]?.status === 'terminated');
    expect((await h.jobs(runId))[0]?.termination_reason).toBe('inactivity_duration_exceeded');
  });

  it('lets a dev environment without inactivity_duration, or with it off, run on', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const unset = await applyDevEnvironment(h, { name: 'dev-unset' });
    const off = await applyDevEnvironment(h, { name: 'dev-off', inactivity_duration: 'off' });
    await h.stepUntil(async () =>
      (await Promise.all([h.jobs(unset), h.jobs(off)])).every((jobs) => jobs[0]?.status === 'running'),
    );
    h.advance(24 * 3_600_000);
    await h.step('jobs-running');
    for (const runId of [unset, off]) {
      expect((await h.jobs(runId))[0]).toMatchObject({ status: 'running', inactivity_secs: null });
    }
  });
});

describe('inactivityDurationOf', () => {
  // Loose configurations (a task's `inactivity_duration` is no field of it): only `type` and the duration are read.
  const runOf = (configuration: Record<string, unknown>) => ({ configuration }) as unknown as StoredRunSpec;

  it("is a dev environment's inactivity_duration in seconds, and null when unset, off or not a dev environment", () => {
    expect(inactivityDurationOf(runOf({ type: 'dev-environment', inactivity_duration: 7200 }))).toBe(7200);
    expect(inactivityDurationOf(runOf({ type: 'dev-environment' }))).toBeNull();
    expect(inactivityDurationOf(runOf({ type: 'dev-environment', inactivity_duration: 'off' }))).toBeNull();
    expect(inactivityDurationOf(runOf({ type: 'task', inactivity_duration: 60 }))).toBeNull();
  });
});

describe('pullIntervalMs', () => {
  const submitted = { submitted_at: 1_000_000 };
  const at = (ageMs: number, watched: boolean) => pullIntervalMs(submitted, 1_000_000 + ageMs, watched);

  it('pulls a young submission often and an older watched one every second', () => {
    expect(at(0, true)).toBe(200);
    expect(at(2_000, true)).toBe(500);
    expect(at(1_003, true)).toBe(251);
    expect(at(4_000, true)).toBe(1_000);
    expect(at(3_600_000, true)).toBe(1_000);
  });

  it("pulls an unwatched one less often as it ages, every 5 s from a minute on (dstack's cadence)", () => {
    expect(at(1_003, false)).toBe(251);
    expect(at(4_000, false)).toBe(1_000);
    expect(at(30_000, false)).toBe(2_500);
    expect(at(60_000, false)).toBe(5_000);
    expect(at(3_600_000, false)).toBe(5_000);
  });
});

describe('a running job pulled on Postgres', () => {
  it('is due again after a fraction of its age, written as a whole millisecond', async () => {
    const h = await createPipelineHarness({ dialect: 'postgres' });
    harness = h;
    const run = await h.applyTask('young', { commands: ['sleep 120'] });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'running', { tickMs: 100 });
    // Due (the start asked for a pull 200 ms later) at an age whose quarter, the pull interval
    // from 800 ms to 4 s of age, is not a whole millisecond.
    const submittedAt = (await h.jobs(run.id))[0]?.submitted_at ?? 0;
    h.advance(Math.max(201, 801 - (h.now() - submittedAt)));
    if ((h.now() - submittedAt) % 4 === 0) h.advance(1);
    const age = h.now() - submittedAt;
    expect(age).toBeLessThan(4_000);
    expect(await h.step('jobs-running')).toBe(1);
    const [job] = await h.jobs(run.id);
    expect(job?.status).toBe('running');
    // The pass's own release went through: it asked for the next pull sooner than the 1 s interval.
    expect(job?.last_processed_at).toBe(h.now() - 1_000 + Math.round(age / 4));
    expect(job?.runner_timestamp).toBeGreaterThan(0);
  });
});

describe('a job placed on an instance that is already up', () => {
  it('waits for its runner from the job submission, not from when the instance was provisioned', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const first = await h.applyTask('warm-up', { commands: ['true'] });
    await h.stepUntil(async () => (await h.run(first.id)).status === 'done');
    const instanceId = (await h.jobs(first.id))[0]?.instance_id ?? null;
    expect((await h.instance(instanceId)).status).toBe('idle');
    // The instance has been up for longer than its provisioning timeout.
    h.advance(11 * 60_000);
    const second = await h.applyTask('reuses', { commands: ['true'] });
    await h.step('jobs-submitted');
    expect((await h.jobs(second.id))[0]).toMatchObject({ status: 'provisioning', instance_id: instanceId });
    // One submit that does not get through (a dropped connection) is tried again.
    vi.spyOn(ShimClient.prototype, 'submitTask').mockRejectedValueOnce(new Error('socket hang up'));
    await h.step('jobs-running');
    expect((await h.jobs(second.id))[0]?.status).toBe('provisioning');
    await h.stepUntil(async () => (await h.run(second.id)).status === 'done');
  });
});

describe('the submit to the runner', () => {
  it("carries the run spec's ssh_key_pub, the key the runner's SSH server lets in", async () => {
    const h = await createPipelineHarness();
    harness = h;
    const key =
      'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 dstack\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI second';
    const submit = vi.spyOn(RunnerClient.prototype, 'submit');
    const spec = {
      configuration: { type: 'task', name: 'keyed', commands: ['true'] },
      ssh_key_pub: key,
    } as unknown as RunSpec;
    const run = await applyRun(h.app, h.project, h.admin, spec);
    await h.stepUntil(async () => submit.mock.calls.length > 0);
    expect(submit.mock.calls[0]?.[0].run).toMatchObject({
      id: run.id,
      run_name: 'keyed',
      project_name: 'main',
      run_spec: { ssh_key_pub: key },
    });
  });
});

describe('a start whose answers were lost', () => {
  it('moves on when the runner already has the job: an earlier pass submitted and started it', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('answer-lost', { commands: ['true'] });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'pulling');
    const [job] = await h.jobs(run.id);
    if (!job) throw new Error('the run has no job');
    // The shim runs the task: an earlier pass gave its runner the job, and timed out waiting for
    // the answers (a busy host), so it left the job pulling.
    const provisioningData = jobProvisioningDataOf(job) as JobProvisioningData;
    const shimPort = (JSON.parse(provisioningData.backend_data ?? '{}') as { agent_ports: { shim: number } })
      .agent_ports.shim;
    const shim = new ShimClient(`http://127.0.0.1:${shimPort}`);
    let runnerPort: number | undefined;
    while (runnerPort === undefined) {
      const task = await shim.getTask(job.id);
      if (task?.status === 'running') runnerPort = task.ports[0]?.host;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const runner = new RunnerClient(`http://127.0.0.1:${runnerPort}`);
    await runner.submit({
      run: { id: run.id, run_name: run.run_name, project_name: 'main', user: 'admin', run_spec: {} },
      // As the server gives it to a runner on the host (the shim's process runtime).
      job_spec: { ...jobSpecOf(job), commands: hostJobCommands(runSpecOf(run), jobSpecOf(job)) },
      job_submission: { id: job.id, submission_num: job.submission_num },
      cluster_info: { job_ips: ['127.0.0.1'], master_job_ip: '127.0.0.1', gpus_per_job: 0 },
      secrets: {},
    });
    await runner.uploadCode(new Uint8Array());
    await runner.run();
    // The next pass finds the runner refusing a second submit (409) and follows the job instead.
    await h.step('jobs-running');
    expect((await h.jobs(run.id))[0]?.status).toBe('running');
    await h.stepUntil(async () => (await h.run(run.id)).status === 'done');
    expect((await h.jobs(run.id))[0]).toMatchObject({ status: 'done', exit_status: 0 });
  });
});
