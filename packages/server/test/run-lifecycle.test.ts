/**
 * End to end on the embedded default: a real server (SQLite, then Postgres) with the local
 * backend; jobs run through a real detached shim and runner on this host.
 */

import type { ApiError, Fleet, RunPlan } from '@dstack/core';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

import {
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

describeEachDatabase('runs on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
  });

  afterAll(async () => {
    // Deleting the default fleet terminates its idle instances (their shim processes).
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('runs a task to done and keeps its output in order', async () => {
    await applyTask(harness, task('hello', ['echo hello', 'echo to-stderr >&2', 'echo world']));
    const run = await harness.waitForRun('hello', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('done');
    expect(run.latest_job_submission?.exit_status).toBe(0);
    // stdout and stderr are separate pipes: each keeps its order, their interleaving is up to the OS.
    const logs = await harness.logs('hello');
    expect(logs.replace('to-stderr\n', '')).toBe('hello\nworld\n');
    expect(logs).toContain('to-stderr\n');
  });

  it('ends a failing task failed with its exit status', async () => {
    await applyTask(harness, task('fails', ['echo before', 'exit 3']));
    const run = await harness.waitForRun('fails', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('failed');
    expect(run.termination_reason).toBe('job_failed');
    expect(run.latest_job_submission?.exit_status).toBe(3);
    expect(run.latest_job_submission?.termination_reason).toBe('container_exited_with_error');
    expect(await harness.logs('fails')).toBe('before\n');
  });

  it('reuses the idle fleet instance for the next run', async () => {
    await applyTask(harness, task('first', ['true']));
    const first = await harness.waitForRun('first', ['done']);
    await applyTask(harness, task('second', ['true']));
    const second = await harness.waitForRun('second', ['done']);
    expect(second.latest_job_submission?.instance_name).toBe(first.latest_job_submission?.instance_name);
    const fleets = (await harness.call<Fleet[]>('/api/project/main/fleets/list')).body;
    const local = fleets.find((fleet) => fleet.name === 'local');
    expect(local?.instances.filter((instance) => instance.status !== 'terminated')).toHaveLength(1);
  });

  it('stops a running task', async () => {
    await applyTask(harness, task('sleeper', ['echo started', 'sleep 60']));
    await harness.waitForRun('sleeper', ['running']);
    // Wait for the command to have started before stopping it.
    const deadline = Date.now() + 10_000;
    while (!(await harness.logs('sleeper')).includes('started') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stop = await harness.call('/api/project/main/runs/stop', { runs_names: ['sleeper'], abort: false });
    expect(stop.status).toBe(200);
    const run = await harness.waitForRun('sleeper', ['terminated', 'failed', 'done']);
    expect(run.status).toBe('terminated');
    expect(run.termination_reason).toBe('stopped_by_user');
    expect(run.latest_job_submission?.termination_reason).toBe('terminated_by_user');
  });

  it("keeps the job's shim and runner closed to every other process on the host", async () => {
    await applyTask(harness, task('guarded', ['echo started', 'sleep 60']));
    const run = await harness.waitForRun('guarded', ['running']);
    const submission = run.latest_job_submission;
    const backendData = JSON.parse(submission?.job_provisioning_data?.backend_data ?? '{}') as {
      agent_ports?: { shim?: number };
    };
    const shimPort = backendData.agent_ports?.shim;
    const runnerPort = submission?.job_runtime_data?.ports?.['10999'];
    expect(shimPort).toBeGreaterThan(0);
    expect(runnerPort).toBeGreaterThan(0);
    // Another process on this host: no token, no tasks and no logs.
    const tasks = await fetch(`http://127.0.0.1:${shimPort}/api/tasks`);
    expect(tasks.status).toBe(401);
    const pulled = await fetch(`http://127.0.0.1:${runnerPort}/api/pull?timestamp=0`);
    expect(pulled.status).toBe(401);
    expect(await pulled.text()).not.toContain('started');
    // The server, which holds the instance's token, still gets the job's logs and stops it.
    const deadline = Date.now() + 10_000;
    while (!(await harness.logs('guarded')).includes('started') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await harness.logs('guarded')).toBe('started\n');
    await harness.call('/api/project/main/runs/stop', { runs_names: ['guarded'], abort: false });
    expect((await harness.waitForRun('guarded', ['terminated', 'failed', 'done'])).status).toBe('terminated');
  });

  it('explains which requirement excluded the offers when the host has too little', async () => {
    const configuration = task('too-big', ['true'], { resources: { gpu: 8, cpu: '1..', memory: '1GB..' } });
    const plan = await harness.call<RunPlan>('/api/project/main/runs/get_plan', {
      run_spec: { configuration },
    });
    expect(plan.status).toBe(200);
    expect(plan.body.job_plans[0]?.offers).toEqual([]);
    // The local offers without the GPU count: the share of the host the run asks for, and the whole host.
    expect(plan.body.job_plans[0]?.exclusions).toEqual([{ requirement: 'gpu count 8', excluded: 2 }]);
    await applyTask(harness, configuration);
    const run = await harness.waitForRun('too-big', ['failed', 'terminated', 'done']);
    expect(run.status).toBe('failed');
    expect(run.latest_job_submission?.termination_reason).toBe('failed_to_start_due_to_no_capacity');
    expect(run.latest_job_submission?.termination_reason_message).toContain('gpu count 8 excluded 2 offer');
  });

  it('rejects a bad configuration naming the field', async () => {
    const answer = await harness.call<ApiError>('/api/project/main/runs/apply', {
      plan: { run_spec: { configuration: { type: 'task', commands: ['true'], resources: { cpu: 'many' } } } },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0]?.fields?.[0]).toEqual(['run_spec', 'configuration', 'resources', 'cpu']);
  });
});

describeEachDatabase('a server restart during a run', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer | null = null;

  afterEach(async () => {
    if (harness) {
      await harness.terminateFleetsAndClose();
    }
    temp.remove();
  });

  it('loses nothing: the run continues and finishes with every line once', async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    await applyTask(harness, task('counter', ['for i in $(seq 1 30); do echo line-$i; sleep 0.1; done']));
    await harness.waitForRun('counter', ['running']);
    // The server has collected some lines before it goes, and the job has more to print.
    const serverUp = harness;
    await waitFor('the first lines in the logs', async () =>
      (await serverUp.logs('counter')).includes('line-3') ? true : null,
    );
    await harness.close();
    harness = null;
    // The job keeps running in the detached shim while no server is up.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    const run = await harness.waitForRun('counter', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('done');
    const expected = Array.from({ length: 30 }, (_, index) => `line-${index + 1}\n`).join('');
    expect(await harness.logs('counter')).toBe(expected);
  });
});
