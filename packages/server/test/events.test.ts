/**
 * Events end to end on the local backend: a real run's life recorded (its user applies it, the
 * pipelines move it, the user stops another), read through `events/list` and printed by the
 * built `dstack event` (and `-w`), and `dstack ps -w` redrawing the runs. One server (SQLite);
 * the route's filters and permissions are tested on both databases in `src/events/events.test.ts`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Event } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack, startDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('events of runs on the local backend', () => {
  const temp = makeTempDir('dstack-events-e2e-');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  let harness: HarnessServer;

  beforeAll(async () => {
    requireBuiltDstack();
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  });

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  async function runEvents(runId: string): Promise<Event[]> {
    const answer = await harness.call<Event[]>('/api/events/list', { within_runs: [runId], ascending: true });
    expect(answer.status).toBe(200);
    return answer.body;
  }

  it("records a run's life: submitted by its user, then provisioning, running and done by the system", async () => {
    const run = await applyTask(harness, task('hello', ['echo hello']));
    await harness.waitForRun('hello', ['done', 'failed', 'terminated']);
    const events = await runEvents(run.id);
    const lines = events.map((event) => `${event.actor_user ?? 'system'}: ${event.message}`);
    expect(lines.slice(0, 2)).toEqual([
      'admin: Run submitted. Status: SUBMITTED',
      'admin: Job created on run submission. Status: SUBMITTED',
    ]);
    const runChanges = lines.filter((line) => line.includes('Run status changed'));
    expect(runChanges).toEqual([
      'system: Run status changed SUBMITTED -> PROVISIONING',
      'system: Run status changed PROVISIONING -> RUNNING',
      'system: Run status changed RUNNING -> TERMINATING. Termination reason: ALL_JOBS_DONE',
      'system: Run status changed TERMINATING -> DONE',
    ]);
    const jobChanges = lines.filter((line) => line.includes('Job status changed'));
    expect(jobChanges[0]).toBe('system: Job status changed SUBMITTED -> PROVISIONING');
    expect(jobChanges).toContain('system: Job status changed TERMINATING -> DONE');
    expect(jobChanges.some((line) => /-> TERMINATING\. Termination reason: DONE_BY_RUNNER/.test(line))).toBe(
      true,
    );
    // Where the job went is recorded with the job: a new instance of the default fleet, or an idle one.
    const placed = events.find((event) => event.targets.some((target) => target.type === 'instance'));
    expect(placed?.message).toMatch(/^(Instance created for job|Job assigned to instance)/);
    expect(placed?.targets.map((target) => target.type).sort()).toEqual(['instance', 'job']);

    const printed = await runDstack(['event', '--run', 'hello'], { env: cliEnvironment });
    expect(printed.code, printed.stderr).toBe(0);
    const printedLines = printed.stdout.trimEnd().split('\n');
    expect(printedLines).toHaveLength(events.length);
    expect(printedLines[0]).toMatch(
      /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[👤admin\] \[run hello\] Run submitted\. Status: SUBMITTED$/,
    );
    expect(printedLines.at(-1)).toMatch(/^\[[^\]]+\] \[run hello\] Run status changed TERMINATING -> DONE$/);
  });

  it('records who stopped a run; `dstack event -w` prints it as it happens, `dstack ps -w` redraws', async () => {
    const run = await applyTask(harness, task('sleeper', ['sleep 600']));
    await harness.waitForRun('sleeper', ['running']);
    const events = startDstack(['event', '-w', '--run', 'sleeper'], { env: cliEnvironment });
    const runs = startDstack(['ps', '-w', '-a'], { env: cliEnvironment });
    await waitFor('the watch to print the run so far', () =>
      events.output().includes('Run status changed PROVISIONING -> RUNNING') ? true : null,
    );

    const stopped = await runDstack(['stop', 'sleeper', '-y'], { env: cliEnvironment });
    expect(stopped.code, stopped.stderr).toBe(0);
    const stop =
      /\[👤admin\] \[run sleeper\] Run status changed RUNNING -> TERMINATING\. Termination reason: STOPPED_BY_USER/;
    await waitFor('the watch to print the stop', () => (stop.test(events.output()) ? true : null));
    await waitFor('ps -w to draw the runs twice', () =>
      (runs.output().match(/^NAME\s+BACKEND/gm) ?? []).length >= 2 ? true : null,
    );
    events.child.kill('SIGINT');
    runs.child.kill('SIGINT');
    expect((await events.result).code).toBe(0);
    expect((await runs.result).code).toBe(0);
    // Each event once, though the watch reads the last seconds again on every poll.
    expect(events.output().match(/Run submitted/g) ?? []).toHaveLength(1);
    expect(runs.output()).toMatch(/^hello\s+remote \(local\).*exited \(0\)/m);

    await harness.waitForRun('sleeper', ['terminated']);
    const recorded = await runEvents(run.id);
    expect(recorded.find((event) => event.message.includes('STOPPED_BY_USER'))).toMatchObject({
      actor_user: 'admin',
      targets: [{ type: 'run', name: 'sleeper', project_name: 'main' }],
    });
  });
});
