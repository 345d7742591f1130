/**
 * `schedule: {cron}` end to end on the local backend: a scheduled task waits `pending`, starts by
 * itself at the time its cron names, starts again at the next one after it finished, and `stop`
 * ends the schedule. The server reads schedules against an injected wall clock, set a moment
 * before each minute so a case waits seconds, not a minute; one case starts on the real clock.
 * One server (SQLite).
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
  let harness: HarnessServer;
  /** What the server's schedule clock is ahead of the real one. */
  let clockOffsetMs = 0;
  const clock = () => Date.now() + clockOffsetMs;

  /** Sets the schedule clock `LEAD_MS` before `at` (a time on the schedule clock). */
  function setClockJustBefore(at: number): void {
    clockOffsetMs = at - LEAD_MS - Date.now();
  }

  beforeAll(async () => {
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir), clock });
  });

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  async function runRow(name: string) {
    return harness.server.app.db
      .selectFrom('runs')
      .selectAll()
      .where('run_name', '=', name)
      .where('deleted', '=', 0)
      .executeTakeFirstOrThrow();
  }

  async function doneJobs(runId: string): Promise<number> {
    const rows = await harness.server.app.db
      .selectFrom('jobs')
      .select('status')
      .where('run_id', '=', runId)
      .execute();
    return rows.filter((row) => row.status === 'done').length;
  }

  /** Waits until the run has `count` done submissions and waits `pending` for its next start. */
  async function waitForStarts(name: string, count: number, timeoutMs = 60_000) {
    return waitFor(
      `${name} to have run ${count} time(s) and wait for its next start`,
      async () => {
        const run = await runRow(name);
        return run.status === 'pending' && (await doneJobs(run.id)) === count ? run : null;
      },
      timeoutMs,
    );
  }

  it('starts on the real clock within the next minute, by itself', async () => {
    clockOffsetMs = 0;
    const applied = await applyTask(harness, task('real-clock', ['echo tick'], EVERY_MINUTE));
    expect(applied.status).toBe('pending');
    expect(applied.jobs).toHaveLength(0);

    await waitForStarts('real-clock', 1, MINUTE_MS + 20_000);
    expect(await harness.logs('real-clock')).toBe('tick\n');
    await harness.call('/api/project/main/runs/stop', { runs_names: ['real-clock'], abort: false });
    await harness.waitForRun('real-clock', ['terminated']);
  });

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
});
