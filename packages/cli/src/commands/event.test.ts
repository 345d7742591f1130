import type { Event } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { makeRun, makeUser } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { fakeServerCli } from '../__fixtures__/fake-server-cli.js';
import { parseSince } from './event.js';

const cli = fakeServerCli();

const PROJECT_ID = '6a1b0c5e-8a6f-4f7e-9d0e-0b6f1f3c2a10';

function event(message: string, recordedAt: string, fields: Partial<Event> = {}): Event {
  return {
    id: crypto.randomUUID(),
    message,
    recorded_at: recordedAt,
    actor_user_id: null,
    actor_user: null,
    is_actor_user_deleted: null,
    targets: [
      {
        type: 'run',
        project_id: PROJECT_ID,
        project_name: 'main',
        is_project_deleted: false,
        id: crypto.randomUUID(),
        name: 'train',
      },
    ],
    ...fields,
  };
}

const localTime = (iso: string) => {
  const time = new Date(iso);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())} ${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}`;
};

describe('dstack event', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("prints the project's latest events oldest first, one line each, as dstack does", async () => {
    const newest = event('Run status changed SUBMITTED -> PROVISIONING', '2026-01-02T10:00:05.000Z');
    const oldest = event('Run submitted. Status: SUBMITTED', '2026-01-02T10:00:00.000Z', {
      actor_user_id: crypto.randomUUID(),
      actor_user: 'alice',
    });
    const imported = event('Instance status changed PENDING -> PROVISIONING', '2026-01-02T10:00:03.000Z', {
      targets: [
        {
          type: 'instance',
          project_id: crypto.randomUUID(),
          project_name: 'shared',
          is_project_deleted: false,
          id: crypto.randomUUID(),
          name: 'fleet-0',
        },
      ],
    });
    const server = await cli.startServer({
      'projects/list': () => [
        {
          project_id: PROJECT_ID,
          project_name: 'main',
          owner: makeUser(),
          created_at: '2026-01-01T00:00:00Z',
        },
      ],
      'events/list': () => [newest, imported, oldest],
    });
    const result = await cli.harness.run(['event']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout.split('\n')).toEqual([
      `[${localTime(oldest.recorded_at)}] [👤alice] [run train] Run submitted. Status: SUBMITTED`,
      `[${localTime(imported.recorded_at)}] [instance shared/fleet-0] Instance status changed PENDING -> PROVISIONING`,
      `[${localTime(newest.recorded_at)}] [run train] Run status changed SUBMITTED -> PROVISIONING`,
      '',
    ]);
    expect(server.requestsTo('events/list')[0]?.body).toEqual({
      within_projects: [PROJECT_ID],
      ascending: false,
    });
  });

  it('--run and --since: the run and its jobs, oldest first from that time', async () => {
    const run = makeRun({ name: 'train', status: 'running', submittedAt: new Date().toISOString() });
    const server = await cli.startServer({
      'runs/get': () => run,
      'events/list': () => [event('Run submitted. Status: SUBMITTED', new Date().toISOString())],
    });
    const before = Date.now();
    const result = await cli.harness.run(['event', '--run', 'train', '--since', '5m']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain('[run train] Run submitted. Status: SUBMITTED');
    const body = server.requestsTo('events/list')[0]?.body as Record<string, unknown>;
    expect(body).toMatchObject({ within_runs: [run.id], ascending: true, limit: 100, prev_id: null });
    const since = Date.parse(body.prev_recorded_at as string);
    expect(since).toBeGreaterThanOrEqual(before - 5 * 60_000);
    expect(since).toBeLessThanOrEqual(Date.now() - 5 * 60_000);
  });

  it('refuses two target filters, an unknown target type and an unreadable --since', async () => {
    await cli.startServer({});
    const two = await cli.harness.run(['event', '--target-run', 'a', '--target-fleet', 'b']);
    expect(two.code).toBe(1);
    expect(two.stderr).toContain('--target-*: use only one of them');
    const type = await cli.harness.run(['event', '--include-target-type', 'cluster']);
    expect(type.code).toBe(1);
    expect(type.stderr).toContain("--include-target-type: 'cluster' is not one of project, user, fleet");
    const since = await cli.harness.run(['event', '--since', 'yesterday']);
    expect(since.code).toBe(1);
    expect(since.stderr).toContain('--since: expected a duration (10s, 5m, 1d) or an RFC 3339 time');
  });
});

describe('parseSince', () => {
  it('reads durations back from now and RFC 3339 times', () => {
    const now = Date.parse('2026-01-02T10:00:00Z');
    expect(parseSince('10s', now).toISOString()).toBe('2026-01-02T09:59:50.000Z');
    expect(parseSince('1d', now).toISOString()).toBe('2026-01-01T10:00:00.000Z');
    expect(parseSince('2023-09-24T15:30:00Z', now).toISOString()).toBe('2023-09-24T15:30:00.000Z');
  });
});
