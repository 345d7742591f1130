/**
 * The `next_token` of `logs/poll` and `logs/stream`: the id of the last log row sent, per job
 * submission. One id for the whole run would lose lines on Postgres with several writers: the
 * jobs of a run are written by whichever replica holds each job, so job A's row 10 can commit
 * after job B's row 11, and a reader that already saw 11 would never ask for 10. Within one job
 * the writer is serialised, so id order is commit order there and a per-job cursor is exact.
 *
 * Text form (URL-safe, no padding): parts joined by `.`. A part `<id>~u<key>` is a job whose id
 * is a UUID (its 16 bytes in base64url, 22 characters), `<id>~s<key>` any other job id (its
 * UTF-8 in base64url), and a lone `<id>` is the floor: a plain numeric token of older servers,
 * still accepted, from which jobs without a part of their own are read.
 */
import { ServerClientError } from '@dstack/core';

export interface LogCursor {
  /** Rows of jobs without an entry in `jobs` are read after this id; null: from the first row. */
  floor: number | null;
  /** Per job submission id: the id of the last row sent. */
  jobs: Map<string, number>;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Ids of up to 15 digits: below 2^53, so exact as JavaScript numbers. */
const ID_PATTERN = /^\d{1,15}$/;
const PART_PATTERN = /^(\d{1,15})~([us])([A-Za-z0-9_-]+)$/;

export function emptyLogCursor(): LogCursor {
  return { floor: null, jobs: new Map() };
}

function encodeJobKey(jobId: string): string {
  if (UUID_PATTERN.test(jobId))
    return `u${Buffer.from(jobId.replaceAll('-', ''), 'hex').toString('base64url')}`;
  return `s${Buffer.from(jobId, 'utf8').toString('base64url')}`;
}

function decodeJobKey(kind: string, key: string): string | null {
  const bytes = Buffer.from(key, 'base64url');
  // Node skips characters it cannot decode; re-encoding tells a faithful key from a damaged one.
  if (bytes.toString('base64url') !== key) return null;
  if (kind === 's') return bytes.toString('utf8');
  if (bytes.length !== 16) return null;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function malformed(token: string): ServerClientError {
  return new ServerClientError(
    `next_token: "${token}" is not a cursor returned by logs/poll or logs/stream`,
    {
      fields: [['next_token']],
    },
  );
}

/** The cursor of `next_token`; null for none. A malformed token is the client's error, naming the field. */
export function parseLogCursor(token: string | null | undefined): LogCursor | null {
  if (token === null || token === undefined || token === '') return null;
  const cursor = emptyLogCursor();
  for (const part of token.split('.')) {
    if (ID_PATTERN.test(part) && cursor.floor === null) {
      cursor.floor = Number(part);
      continue;
    }
    const match = PART_PATTERN.exec(part);
    const jobId = match ? decodeJobKey(match[2] as string, match[3] as string) : null;
    if (!match || jobId === null || cursor.jobs.has(jobId)) throw malformed(token);
    cursor.jobs.set(jobId, Number(match[1]));
  }
  return cursor;
}

function serialize(cursor: LogCursor): string {
  const parts: string[] = cursor.floor === null ? [] : [String(cursor.floor)];
  for (const [jobId, id] of cursor.jobs) parts.push(`${id}~${encodeJobKey(jobId)}`);
  return parts.join('.');
}

/** The `next_token` text of `cursor`; null when it has nothing to resume from. */
export function formatLogCursor(cursor: LogCursor): string | null {
  return serialize(cursor) || null;
}

/** Records `row` as sent (its job's cursor moves to it); returns the token that resumes right after it. */
export function advanceLogCursor(cursor: LogCursor, row: { job_id: string; id: number }): string {
  cursor.jobs.set(row.job_id, Number(row.id));
  return serialize(cursor);
}
