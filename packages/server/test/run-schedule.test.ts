/**
 * `schedule: {cron}` end to end on the local backend: a scheduled task waits `pending`, starts by
 * itself at the time its cron names, starts again at the next one after it finished, and `stop`
 * ends the schedule. The server reads schedules against an injected wall clock, set a moment
 * before each minute so a case waits seconds, not a minute. One case starts on the real clock, on
 * a second server without an injected clock: applied first and checked last, it waits for its
 * minute while the other cases run. Both servers on SQLite.
 */
import type { Event, Run } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

// A scheduled run looks at its clock at least every 10 s (the run pipeline's interval).
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const EVERY_MINUTE = { schedule: { cron: '* * * * *' } };
const MINUTE_MS = 60_000;
/** How long before a start the injected clock is set: the run starts this much later. */
const LEAD_MS = 1_500;

describe('scheduled runs on the local backend', () => {
  const temp = makeTempDir('dstack-schedule-e2e-');
  const realClockTemp = makeTempDir('dstack-schedule-real-clock-');
  let harness: HarnessServer;
  /** The server on the real clock, and the run it was given at the start. */
  let realClock: HarnessServer;
  let realClockApplied: Run;
  /** What the server's schedule clock is ahead of the real one. */
  let clockOffsetMs = 0;
  const clock = () => Date.now() + clockOffsetMs;

  /** Sets the schedule clock `LEAD_MS` before `at` (a time on the schedule clock). */
  function setClockJustBefore(at: number): void {
    clockOffsetMs = at - LEAD_MS - Date.now();
  }

  beforeAll(async () => {
    [harness, realClock] = await Promise.all([
      startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir), clock }),
      startHarnessServer({ dir: realClockTemp.dir, config: localBackendConfig(realClockTemp.dir) }),
    ]);
    realClockApplied = await applyTask(realClock, task('real-clock', ['echo tick'], EVERY_MINUTE));
  });

  afterAll(async () => {
    await Promise.all([harness?.terminateFleetsAndClose(), realClock?.terminateFleetsAndClose()]);
    temp.remove();
    realClockTemp.remove();
  });

  async function runRow(name: string, server: HarnessServer = harness) {
    return server.server.app.db
      .selectFrom('runs')
      .selectAll()
      .where('run_name', '=', name)
      .where('deleted', '=', 0)
      .executeTakeFirstOrThrow();
  }

  async function doneJobs(runId: string, server: HarnessServer = harness): Promise<number> {
    const rows = await server.server.app.db
      .selectFrom('jobs')
      .select('status')
      .where('run_id', '=', runId)
      .execute();
    return rows.filter((row) => row.status === 'done').length;
  }

  /** Waits until the run has `count` done submissions and waits `pending` for its next start. */
  async function waitForStarts(name: string, count: number, timeoutMs = 60_000, server = harness) {
    return waitFor(
      `${name} to have run ${count} time(s) and wait for its next start`,
      async () => {
        const run = await runRow(name, server);
        return run.status === 'pending' && (await doneJobs(run.id, server)) === count ? run : null;
      },
      timeoutMs,
    );
  }

  it('starts at each time its cron names, again after it finished, until it is stopped', async () => {
    const now = clock();
    setClockJustBefore(Math.ceil((now + LEAD_MS) / MINUTE_MS) * MINUTE_MS + MINUTE_MS);
    const applied = await applyTask(harness, task('nightly', ['echo tick'], EVERY_MINUTE));
    expect(applied.status).toBe('pending');
    const events = async () =>
      (
        await harness.call<Event[]>('/api/events/list', { within_runs: [applied.id], ascending: true })
      ).body.map((event) => event.message);
    expect(await events()).toContain('Run submitted. Status: PENDING');

    // First start: it waits pending for the time its cron names, then runs by itself.
    const afterFirst = await waitForStarts('nightly', 1);
    const nextStart = afterFirst.next_triggered_at ?? 0;
    expect(nextStart % MINUTE_MS).toBe(0);
    expect(nextStart).toBeGreaterThan(clock());

    // Second start, at the next minute the clock reaches.
    setClockJustBefore(nextStart);
    await waitForStarts('nightly', 2);
    expect((await events()).filter((message) => message === 'Run started on schedule')).toHaveLength(2);

    // A stop ends the schedule: the run is terminated, for good.
    const stopped = await harness.call('/api/project/main/runs/stop', {
      runs_names: ['nightly'],
      abort: false,
    });
    expect(stopped.status).toBe(200);
    const run: Run = await harness.waitForRun('nightly', ['terminated']);
    expect(run.termination_reason).toBe('stopped_by_user');
    expect((await runRow('nightly')).status).toBe('terminated');
  });

  it('refuses a cron expression it cannot read, naming the field', async () => {
    const answer = await harness.call<{ detail: Array<{ msg: string }> }>('/api/project/main/runs/get_plan', {
      run_spec: {
        configuration: task('bad-cron', ['true'], { schedule: { cron: ['0 8 * * *', '61 * * * *'] } }),
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0]?.msg).toContain('schedule: invalid cron expression "61 * * * *"');
  });

  // Last: its run was applied before the other cases, and waits for the real minute meanwhile.
  it('starts on the real clock within the next minute, by itself', async () => {
    expect(realClockApplied.status).toBe('pending');
    expect(realClockApplied.jobs).toHaveLength(0);

    await waitForStarts('real-clock', 1, MINUTE_MS + 20_000, realClock);
    expect(await realClock.logs('real-clock')).toBe('tick\n');
    await realClock.call('/api/project/main/runs/stop', { runs_names: ['real-clock'], abort: false });
    await realClock.waitForRun('real-clock', ['terminated']);
  });
});
