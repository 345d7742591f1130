/**
 * End to end: the local backend's instances take their share of the host (injected: 2 CPUs),
 * runs beyond it wait for capacity or fail with no capacity, and idle instances are reused
 * (or make room, whichever project they belong to) before new ones are made.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createLocalBackendPlugin, type HostResources } from '@dstack/backend-local';
import type { Fleet, InstanceOfferWithAvailability, Run } from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

/** A host with room for two instances of one CPU and dstack's default memory, `8GB..`. */
const SMALL_HOST: HostResources = { cpuCount: 2, cpuArch: 'x86', memoryGib: 32, diskGib: 500, gpus: [] };
/** What the tasks asked for: `cpu: 1..`, the rest dstack's defaults. */
const ONE_CPU_UP = { resources: { cpu: '1..' } };
const WAIT_FOR_CAPACITY = { retry: { on_events: ['no-capacity'], duration: '10m' } };

describe('the local backend on a host of 2 CPUs', () => {
  let temp: ReturnType<typeof makeTempDir>;
  let harness: HarnessServer;

  beforeEach(async () => {
    temp = makeTempDir();
    harness = await startHarnessServer({
      dir: temp.dir,
      config: {
        projects: [
          ...(localBackendConfig(temp.dir).projects ?? []),
          // Another project on the same host (its instances directory too).
          { name: 'other', backends: [{ type: 'local', instances_dir: join(temp.dir, 'instances') }] },
        ],
      },
      plugins: [createLocalBackendPlugin({ hostResources: SMALL_HOST })],
    });
  });

  afterEach(async () => {
    await harness.call('/api/project/other/fleets/delete', { names: await fleetNames('other') });
    await waitFor("the other project's fleets to be gone", async () =>
      (await fleetNames('other')).length === 0 ? true : null,
    );
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  async function fleetNames(project: string): Promise<string[]> {
    const fleets = (await harness.call<Fleet[]>(`/api/project/${project}/fleets/list`)).body;
    return fleets.map((fleet) => fleet.name);
  }

  /** Every instance row, of any status: launched instances and any placeholder left behind. */
  async function instanceRows() {
    return harness.server.app.db.selectFrom('instances').select(['name', 'status', 'deleted']).execute();
  }

  /** The instances that were launched (their placeholders aside), terminated ones included. */
  async function launchedInstances(): Promise<number> {
    const rows = await harness.server.app.db
      .selectFrom('instances')
      .select('id')
      .where('job_provisioning_data', 'is not', null)
      .execute();
    return rows.length;
  }

  /** Instance homes in the instances directory: one per shim started and not yet terminated. */
  async function instanceHomes(): Promise<string[]> {
    return (await readdir(join(temp.dir, 'instances'))).filter((name) => !name.startsWith('.'));
  }

  it('makes runs beyond the host wait for capacity, then runs them on the instances freed', async () => {
    const names = ['wait-0', 'wait-1', 'wait-2', 'wait-3', 'wait-4'];
    for (const name of names) {
      await applyTask(harness, task(name, ['sleep 0.5', `echo ${name}`], WAIT_FOR_CAPACITY));
    }

    const runs: Run[] = [];
    for (const name of names)
      runs.push(await harness.waitForRun(name, ['done', 'failed', 'terminated'], 80_000));

    expect(runs.map((run) => run.status)).toEqual(names.map(() => 'done'));
    expect(await harness.logs('wait-4')).toBe('wait-4\n');
    // Two instances of one CPU fill the host: the other runs took them once idle.
    expect(await launchedInstances()).toBeLessThanOrEqual(2);
    expect((await instanceHomes()).length).toBeLessThanOrEqual(2);
    const instanceNames = new Set(runs.map((run) => run.latest_job_submission?.instance_name));
    expect(instanceNames.size).toBeLessThanOrEqual(2);
  });

  it('runs 20 `cpu: 1..` tasks two at a time, and leaves no placeholder rows', async () => {
    // Each task marks itself active in a directory while it runs and notes how many are: what
    // ran at once is seen by the tasks themselves, not timed.
    const active = join(temp.dir, 'active');
    const counts = join(temp.dir, 'counts');
    mkdirSync(active);
    const names = Array.from({ length: 20 }, (_, index) => `many-${index}`);
    for (const name of names) {
      const commands = [
        `mkdir ${active}/${name}`,
        `ls ${active} | wc -l >> ${counts}`,
        'sleep 0.3',
        `rmdir ${active}/${name}`,
      ];
      await applyTask(harness, { type: 'task', name, commands, ...ONE_CPU_UP, ...WAIT_FOR_CAPACITY });
    }

    for (const name of names) {
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated'], 85_000);
      expect(run.status, `${name}: ${run.latest_job_submission?.termination_reason_message}`).toBe('done');
    }
    const seen = (await readFile(counts, 'utf8')).trim().split('\n').map(Number);
    expect(seen).toHaveLength(20);
    expect(Math.max(...seen)).toBe(2);
    // The two instances of one CPU, idle now; no row for the attempts that found the host full.
    const rows = await instanceRows();
    expect(rows.map((row) => row.status).sort()).toEqual(['idle', 'idle']);
  });

  it('gives a second `cpu: 1..` run its own instance of one CPU while the first runs', async () => {
    const go = join(temp.dir, 'go');
    await applyTask(harness, task('first', [`while [ ! -f ${go} ]; do sleep 0.05; done`], ONE_CPU_UP));
    const first = await harness.waitForRun('first', ['running']);

    // The plan offers what fits beside it: one CPU, and says the whole host is busy.
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration: { type: 'task', commands: ['true'], ...ONE_CPU_UP } } },
    );
    expect(
      plan.body.job_plans[0]?.offers.map((offer) => [offer.instance.resources.cpus, offer.availability]),
    ).toEqual([
      [1, 'available'],
      [2, 'busy'],
    ]);

    await applyTask(harness, task('second', ['echo second'], ONE_CPU_UP));
    const second = await harness.waitForRun('second', ['done', 'failed', 'terminated']);

    expect(second.status, second.latest_job_submission?.termination_reason_message ?? '').toBe('done');
    expect(second.latest_job_submission?.instance_name).not.toBe(first.latest_job_submission?.instance_name);
    for (const run of [first, second]) {
      expect(run.latest_job_submission?.job_provisioning_data?.instance_type.resources.cpus).toBe(1);
    }
    writeFileSync(go, '');
    expect((await harness.waitForRun('first', ['done', 'failed', 'terminated'])).status).toBe('done');
  });

  it('runs two `cpu: 1..` tasks side by side after a default-resources task left the whole host idle', async () => {
    await applyTask(harness, { type: 'task', name: 'whole-default', commands: ['true'] });
    const whole = await harness.waitForRun('whole-default', ['done', 'failed', 'terminated']);
    expect(whole.status).toBe('done');
    expect(whole.latest_job_submission?.job_provisioning_data?.instance_type.resources.cpus).toBe(2);

    // Neither task has a retry policy: the idle instance must not make either wait or fail.
    const go = join(temp.dir, 'go');
    const waitForGo = `while [ ! -f ${go} ]; do sleep 0.05; done`;
    const runningOrEnded = ['running', 'done', 'failed', 'terminated'];
    await applyTask(harness, task('beside-0', [waitForGo], ONE_CPU_UP));
    expect((await harness.waitForRun('beside-0', runningOrEnded)).status).toBe('running');
    await applyTask(harness, task('beside-1', [waitForGo], ONE_CPU_UP));
    const second = await harness.waitForRun('beside-1', runningOrEnded);
    expect(second.status, second.latest_job_submission?.termination_reason_message ?? '').toBe('running');
    expect((await harness.waitForRun('beside-0', runningOrEnded)).status).toBe('running');
    writeFileSync(go, '');
    for (const name of ['beside-0', 'beside-1']) {
      expect((await harness.waitForRun(name, ['done', 'failed', 'terminated'])).status).toBe('done');
    }
  });

  it('starts queued runs by priority, highest first, when the host frees', async () => {
    const WHOLE_HOST = { resources: { cpu: 2, memory: '1GB..' } };
    const go = join(temp.dir, 'go');
    const order = join(temp.dir, 'order');
    await applyTask(harness, task('holder', [`while [ ! -f ${go} ]; do sleep 0.05; done`], WHOLE_HOST));
    await harness.waitForRun('holder', ['running']);

    const priorities = [10, 90, 50];
    for (const priority of priorities) {
      const name = `prio-${priority}`;
      await applyTask(
        harness,
        task(name, [`echo ${name} >> ${order}`], { ...WHOLE_HOST, ...WAIT_FOR_CAPACITY, priority }),
      );
      // Each has looked for capacity and is waiting for it before the host frees.
      await waitFor(`${name} to wait for capacity`, async () => {
        const job = await harness.server.app.db
          .selectFrom('jobs')
          .select('last_processed_at')
          .where('run_name', '=', name)
          .executeTakeFirst();
        return job && job.last_processed_at > 0 ? true : null;
      });
    }
    writeFileSync(go, '');

    for (const priority of priorities) {
      const run = await harness.waitForRun(`prio-${priority}`, ['done', 'failed', 'terminated'], 60_000);
      expect(run.status).toBe('done');
      expect(run.run_spec.configuration.priority).toBe(priority);
    }
    expect((await readFile(order, 'utf8')).trim().split('\n')).toEqual(['prio-90', 'prio-50', 'prio-10']);
  });

  it('keeps a small run off the host while a higher-priority run waits for it, and says why', async () => {
    const go = join(temp.dir, 'go');
    const order = join(temp.dir, 'order');
    const ONE_CPU = { resources: { cpu: 1, memory: '1GB..' } };
    await applyTask(harness, task('holder', [`while [ ! -f ${go} ]; do sleep 0.05; done`], ONE_CPU));
    await harness.waitForRun('holder', ['running']);
    // The host's other CPU is free, but the urgent run needs both: it waits.
    await applyTask(
      harness,
      task('urgent', [`echo urgent >> ${order}`], {
        resources: { cpu: 2, memory: '1GB..' },
        ...WAIT_FOR_CAPACITY,
        priority: 90,
      }),
    );
    await waitFor('urgent to wait for capacity', async () => {
      const job = await harness.server.app.db
        .selectFrom('jobs')
        .select('last_processed_at')
        .where('run_name', '=', 'urgent')
        .executeTakeFirst();
      return job && job.last_processed_at > 0 ? true : null;
    });

    // The small run would fit beside the holder; it leaves the host to the urgent one.
    const small = await applyTask(
      harness,
      task('small', [`echo small >> ${order}`], { ...ONE_CPU, ...WAIT_FOR_CAPACITY }),
    );
    await waitFor('the small run to say it waits for the urgent one', async () => {
      const events = await harness.call<Array<{ message: string }>>('/api/events/list', {
        within_runs: [small.id],
      });
      return events.body.some(
        (event) =>
          event.message === 'Job waits for higher-priority run urgent (priority 90) to be provisioned first',
      )
        ? true
        : null;
    });
    expect((await harness.call<Run>('/api/project/main/runs/get', { run_name: 'small' })).body.status).toBe(
      'submitted',
    );

    writeFileSync(go, '');
    for (const name of ['urgent', 'small']) {
      expect((await harness.waitForRun(name, ['done', 'failed', 'terminated'], 60_000)).status).toBe('done');
    }
    expect((await readFile(order, 'utf8')).trim().split('\n')).toEqual(['urgent', 'small']);
  });

  it("ends another project's idle instance that holds the host, rather than failing a run", async () => {
    const applied = await harness.call('/api/project/other/runs/apply', {
      plan: {
        run_spec: { configuration: task('whole', ['true'], { resources: { cpu: 2, memory: '1GB..' } }) },
      },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    await waitFor("the other project's run to be done", async () => {
      const run = (await harness.call<Run>('/api/project/other/runs/get', { run_name: 'whole' })).body;
      return run.status === 'done' ? run : null;
    });

    // Its instance is idle for minutes (idle_duration), and holds both CPUs: no retry needed.
    await applyTask(harness, task('mine', ['echo mine'], ONE_CPU_UP));
    const mine = await harness.waitForRun('mine', ['done', 'failed', 'terminated'], 60_000);

    expect(mine.status, mine.latest_job_submission?.termination_reason_message ?? '').toBe('done');
    expect(await harness.logs('mine')).toBe('mine\n');
  });

  it('leaves no instance row for runs without retry that found the host full', async () => {
    const names = ['full-0', 'full-1', 'full-2', 'full-3', 'full-4'];
    await Promise.all(names.map((name) => applyTask(harness, task(name, ['sleep 1'], ONE_CPU_UP))));

    for (const name of names) {
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated'], 60_000);
      if (run.status !== 'done') {
        expect(run.latest_job_submission?.termination_reason).toBe('failed_to_start_due_to_no_capacity');
      }
    }
    // Whether a run saw the host busy or lost the race for it at launch, only instances remain.
    const rows = await instanceRows();
    expect(rows.length).toBeLessThanOrEqual(2);
    expect(rows.every((row) => row.status === 'idle')).toBe(true);
  });

  it('fails a run the host has no room for when its retry does not cover no-capacity', async () => {
    await applyTask(harness, task('whole-host', ['sleep 60'], { resources: { cpu: 2, memory: '1GB..' } }));
    await harness.waitForRun('whole-host', ['running']);

    await applyTask(harness, task('no-room', ['true']));
    const run = await harness.waitForRun('no-room', ['done', 'failed', 'terminated']);

    expect(run.status).toBe('failed');
    expect(run.latest_job_submission?.termination_reason).toBe('failed_to_start_due_to_no_capacity');
    expect(run.latest_job_submission?.termination_reason_message).toContain(
      'no capacity now: the offers that match are busy, held by running instances (local/local/local: 1 CPUs',
    );
    // The attempt wrote no instance row: only the whole host's instance is there.
    expect((await instanceRows()).map((row) => row.status)).toEqual(['busy']);
    await harness.call('/api/project/main/runs/stop', { runs_names: ['whole-host'], abort: true });
  });

  it('reuses one idle instance for short runs one after another', async () => {
    const names = ['one-0', 'one-1', 'one-2', 'one-3'];
    const instanceNames: Array<string | null | undefined> = [];
    for (const name of names) {
      await applyTask(harness, task(name, ['true']));
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated']);
      expect(run.status).toBe('done');
      instanceNames.push(run.latest_job_submission?.instance_name);
    }

    expect(new Set(instanceNames).size).toBe(1);
    expect(await launchedInstances()).toBe(1);
  });

  it('terminates idle instances a larger run does not fit, to make room for it', async () => {
    // Two idle instances of one CPU hold the host...
    await applyTask(harness, task('small-0', ['sleep 1'], WAIT_FOR_CAPACITY));
    await applyTask(harness, task('small-1', ['sleep 1'], WAIT_FOR_CAPACITY));
    await harness.waitForRun('small-0', ['done']);
    await harness.waitForRun('small-1', ['done']);
    const smallInstances = await launchedInstances();

    // ...and a run of two CPUs fits neither: they make way, without a retry policy.
    await applyTask(harness, task('large', ['echo large'], { resources: { cpu: 2, memory: '1GB..' } }));
    const large = await harness.waitForRun('large', ['done', 'failed', 'terminated'], 60_000);

    expect(large.status).toBe('done');
    expect(await harness.logs('large')).toBe('large\n');
    expect(await launchedInstances()).toBe(smallInstances + 1);
  });
});
