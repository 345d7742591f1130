import type { LogEvent } from '@dstack/core';
import { afterEach, describe, expect, it } from 'vitest';
import { makeLogEvent } from '../__fixtures__/api-objects.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';
import type { CliIo } from '../io.js';
import { DstackApiClient } from './client.js';
import { LogReader, LogWriter } from './log-reader.js';

let server: FakeDstackServer | undefined;

afterEach(async () => {
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

const text = (events: readonly LogEvent[]) =>
  events.map((event) => Buffer.from(event.message, 'base64').toString()).join('');

async function readerFor(
  poll: (body: { start_time?: string; next_token?: string; limit: number }) => unknown,
) {
  server = await FakeDstackServer.start({ handlers: { 'logs/poll': poll } });
  const client = new DstackApiClient({ url: server.url, token: server.token, projectName: 'main' });
  return new LogReader(client, 'train');
}

describe('LogReader', () => {
  it('returns each event once when the server treats start_time as inclusive', async () => {
    // Two events share a millisecond: both must be printed once, not dropped, not repeated.
    const logs = [
      makeLogEvent('stdout', 'a\n', 1),
      makeLogEvent('stdout', 'b\n', 2),
      makeLogEvent('stdout', 'c\n', 2),
    ];
    let visible = 2;
    const reader = await readerFor((body) => ({
      logs: logs.slice(0, visible).filter((event) => !body.start_time || event.timestamp >= body.start_time),
      next_token: null,
    }));
    expect(text(await reader.readNew())).toBe('a\nb\n');
    expect(text(await reader.readNew())).toBe('');
    visible = 3;
    expect(text(await reader.readNew())).toBe('c\n');
    expect(text(await reader.readNew())).toBe('');
    expect(server?.requestsTo('logs/poll').at(-1)?.body).toMatchObject({
      run_name: 'train',
      start_time: logs[2]!.timestamp,
      descending: false,
    });
  });

  it('follows next_token when the server gives one', async () => {
    const logs = Array.from({ length: 5 }, (_, index) => makeLogEvent('stdout', `${index}\n`, 0));
    const reader = await readerFor((body) => {
      const offset = Number(body.next_token ?? 0);
      const page = logs.slice(offset, offset + 2);
      return { logs: page, next_token: String(offset + page.length) };
    });
    expect(text(await reader.readNew())).toBe('0\n1\n2\n3\n4\n');
    logs.push(makeLogEvent('stdout', '5\n', 0));
    expect(text(await reader.readNew())).toBe('5\n');
    expect(
      server
        ?.requestsTo('logs/poll')
        .every((request) => !Object.hasOwn(request.body as object, 'start_time')),
    ).toBe(true);
  });
});

describe('LogWriter', () => {
  it('decodes base64, routes by source and keeps characters split across events', () => {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = {
      stdout: (chunk) => out.push(chunk),
      stderr: (chunk) => err.push(chunk),
      stderrColors: false,
    };
    const euro = Buffer.from('€\n');
    const event = (source: LogEvent['log_source'], bytes: Buffer): LogEvent => ({
      timestamp: '2024-05-01T10:00:00.000Z',
      log_source: source,
      message: bytes.toString('base64'),
    });
    new LogWriter(io).write([
      event('stdout', euro.subarray(0, 1)),
      event('stderr', Buffer.from('warn\n')),
      event('stdout', euro.subarray(1)),
      event('runner', Buffer.from('runner says\n')),
    ]);
    expect(out.join('')).toBe('€\n');
    expect(err.join('')).toBe('warn\nrunner says\n');
  });
});
