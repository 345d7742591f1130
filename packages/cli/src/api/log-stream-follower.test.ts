import type { LogEvent } from '@dstack/core';
import { afterEach, describe, expect, it } from 'vitest';
import { makeLogEvent } from '../__fixtures__/api-objects.js';
import {
  FakeDstackServer,
  type FakeHandler,
  HttpAnswer,
  StreamAnswer,
} from '../__fixtures__/fake-dstack-server.js';
import { ServerApiError } from './api-errors.js';
import { DstackApiClient } from './client.js';
import { LogStreamFollower } from './log-stream-follower.js';

let server: FakeDstackServer | undefined;

afterEach(async () => {
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

async function clientFor(handlers: Record<string, FakeHandler>) {
  server = await FakeDstackServer.start({ handlers });
  return new DstackApiClient({ url: server.url, token: server.token, projectName: 'main' });
}

const text = (events: readonly LogEvent[]) =>
  events.map((event) => Buffer.from(event.message, 'base64').toString()).join('');

const logs = Array.from({ length: 6 }, (_, index) => makeLogEvent('stdout', `line ${index}\n`, index));
const eventLine = (index: number) => ({ ...logs[index], next_token: String(index + 1) });

describe('LogStreamFollower', () => {
  it('delivers events in order and returns at the end line', async () => {
    const client = await clientFor({
      'logs/stream': () =>
        new StreamAnswer([
          { heartbeat: true, next_token: null },
          eventLine(0),
          eventLine(1),
          { heartbeat: true, next_token: '2' },
          { end: 'run_finished', status: 'done', next_token: '2' },
        ]),
    });
    const follower = await LogStreamFollower.open(client, 'train');
    const events: LogEvent[] = [];
    await follower?.follow((event) => events.push(event));
    expect(events).toEqual([logs[0], logs[1]]);
    expect(server?.requestsTo('logs/stream').map((request) => request.body)).toEqual([{ run_name: 'train' }]);
  });

  it('reopens a broken stream from the last next_token, losing and repeating nothing', async () => {
    let opened = 0;
    const client = await clientFor({
      'logs/stream': (body: { next_token?: string }) => {
        opened += 1;
        const from = Number(body.next_token ?? 0);
        if (opened === 1) return new StreamAnswer([eventLine(0), eventLine(1), eventLine(2)]); // cut: no end line
        if (opened === 2) return new HttpAnswer(503, { detail: [{ msg: 'restarting', code: 'error' }] });
        if (opened === 3) {
          return new StreamAnswer([
            eventLine(from),
            { end: 'server_stopping', next_token: String(from + 1) },
          ]);
        }
        const rest = logs.slice(from).map((_, offset) => eventLine(from + offset));
        return new StreamAnswer([...rest, { end: 'run_finished', status: 'failed', next_token: '6' }]);
      },
    });
    const follower = await LogStreamFollower.open(client, 'train', { reconnectDelayMs: 1 });
    const events: LogEvent[] = [];
    await follower?.follow((event) => events.push(event));
    expect(text(events)).toBe(text(logs));
    expect(server?.requestsTo('logs/stream').map((request) => request.body)).toEqual([
      { run_name: 'train' },
      { run_name: 'train', next_token: '3' },
      { run_name: 'train', next_token: '3' },
      { run_name: 'train', next_token: '4' },
    ]);
  });

  it('retries a first open that fails with a server error, and gives up like a broken stream', async () => {
    let opened = 0;
    const client = await clientFor({
      'logs/stream': () => {
        opened += 1;
        if (opened <= 2) return new HttpAnswer(503, { detail: [{ msg: 'restarting', code: 'error' }] });
        return new StreamAnswer([eventLine(0), { end: 'run_finished', status: 'done', next_token: '1' }]);
      },
    });
    const follower = await LogStreamFollower.open(client, 'train', { reconnectDelayMs: 1 });
    const events: LogEvent[] = [];
    await follower?.follow((event) => events.push(event));
    expect(events).toEqual([logs[0]]);
    expect(opened).toBe(3);

    if (server)
      server.handlers['logs/stream'] = () =>
        new HttpAnswer(500, { detail: [{ msg: 'down', code: 'error' }] });
    const failing = await LogStreamFollower.open(client, 'train', { reconnectDelayMs: 1 });
    await expect(failing?.follow(() => {})).rejects.toThrow('down');
  });

  it('gives up after repeated failures without progress', async () => {
    let opened = 0;
    const client = await clientFor({
      'logs/stream': () => {
        opened += 1;
        return opened === 1
          ? new StreamAnswer([{ heartbeat: true, next_token: null }])
          : new HttpAnswer(500, { detail: [{ msg: 'down', code: 'error' }] });
      },
    });
    const follower = await LogStreamFollower.open(client, 'train', { reconnectDelayMs: 1 });
    await expect(follower?.follow(() => {})).rejects.toThrow('down');
    // The first stream, then five attempts to reopen it.
    expect(opened).toBe(6);
  });

  it('is null on a server without logs/stream, and fails on an unknown run', async () => {
    const client = await clientFor({
      'logs/stream': (body: { run_name: string }) =>
        new HttpAnswer(404, {
          detail: [{ msg: `Run ${body.run_name} not found`, code: 'resource_not_exists' }],
        }),
    });
    await expect(LogStreamFollower.open(client, 'gone')).rejects.toThrow(ServerApiError);
    if (server) delete server.handlers['logs/stream'];
    expect(await LogStreamFollower.open(client, 'train')).toBeNull();
  });
});
