import { randomUUID } from 'node:crypto';
import { ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { advanceLogCursor, emptyLogCursor, formatLogCursor, parseLogCursor } from './log-cursor.js';

function malformedError(token: string): unknown {
  try {
    parseLogCursor(token);
  } catch (error) {
    return error;
  }
  throw new Error(`"${token}" was accepted`);
}

describe('log cursor', () => {
  it('round-trips the last id of every job, UUID or not', () => {
    const cursor = emptyLogCursor();
    const uuid = randomUUID();
    advanceLogCursor(cursor, { job_id: uuid, id: 11 });
    advanceLogCursor(cursor, { job_id: 'job/1 é', id: 7 });
    const token = advanceLogCursor(cursor, { job_id: uuid, id: 12 });
    expect(formatLogCursor(cursor)).toBe(token);
    expect(parseLogCursor(token)).toEqual({
      floor: null,
      jobs: new Map([
        [uuid, 12],
        ['job/1 é', 7],
      ]),
    });
  });

  it('takes a plain number (the token of older servers) as the floor, and keeps it', () => {
    const cursor = parseLogCursor('42');
    expect(cursor).toEqual({ floor: 42, jobs: new Map() });
    if (!cursor) throw new Error('no cursor');
    expect(formatLogCursor(cursor)).toBe('42');
    const token = advanceLogCursor(cursor, { job_id: 'a', id: 50 });
    expect(parseLogCursor(token)).toEqual({ floor: 42, jobs: new Map([['a', 50]]) });
  });

  it('has no token before anything was sent', () => {
    expect(parseLogCursor(null)).toBeNull();
    expect(parseLogCursor(undefined)).toBeNull();
    expect(parseLogCursor('')).toBeNull();
    expect(formatLogCursor(emptyLogCursor())).toBeNull();
  });

  it('stays short and URL-safe for a run of tens of jobs', () => {
    const cursor = emptyLogCursor();
    let token = '';
    for (let job = 0; job < 40; job++)
      token = advanceLogCursor(cursor, { job_id: randomUUID(), id: 9_999_999 });
    expect(token).toMatch(/^[A-Za-z0-9._~-]+$/);
    // 22 characters of key, 7 of id and 3 of separators per job.
    expect(token.length).toBeLessThan(40 * 33);
  });

  it.each([
    'abc',
    '-1',
    '1.2',
    '1.',
    '12~uAAAA',
    `12~x${Buffer.from('job').toString('base64url')}`,
    '12~s',
    '12~s*',
    '1234567890123456',
  ])('rejects "%s", naming next_token', (token) => {
    const error = malformedError(token);
    expect(ServerClientError.isInstance(error)).toBe(true);
    expect((error as ServerClientError).fields).toEqual([['next_token']]);
  });

  it('rejects a token that names one job twice', () => {
    const cursor = emptyLogCursor();
    const part = advanceLogCursor(cursor, { job_id: 'a', id: 1 });
    expect(ServerClientError.isInstance(malformedError(`${part}.${part}`))).toBe(true);
  });
});
