/**
 * `logs/stream`: a run's logs as newline-delimited JSON, from a cursor to the
 * end of the run. New rows are pushed as soon as `storeRunnerLogs` announces
 * them in this process; a periodic database re-check finds rows stored by
 * another replica. Lines (core's `LogStreamLineSchema`): a heartbeat first and
 * after every quiet interval, one line per log event carrying its cursor, and
 * a final `end` line once the run is finished and every row was sent.
 */
import { isRunFinished, type LogStreamLine, type RunStatus } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { ProjectsTable } from '../db/schema.js';
import {
  advanceLogCursor,
  emptyLogCursor,
  formatLogCursor,
  type LogCursor,
  parseLogCursor,
} from './log-cursor.js';
import { findRunForLogs, type LogRowFilter, selectLogRows, toLogEvent } from './logs.js';

export interface LogStreamSettings {
  /** Milliseconds without any line after which a heartbeat line is sent. Default 15 000. */
  heartbeatIntervalMs?: number;
  /**
   * Milliseconds between database re-checks when no in-process notice came (logs stored by
   * another server replica, or the run finishing). Default 1 000.
   */
  recheckIntervalMs?: number;
}

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 15_000;
export const DEFAULT_RECHECK_INTERVAL_MS = 1_000;

/** Rows per database read. */
const READ_BATCH = 1000;

export interface StreamLogsOptions extends LogStreamSettings {
  runName: string;
  jobSubmissionId?: string | null;
  startTime?: string | null;
  /** Resume after this cursor (a `next_token` of `logs/poll` or `logs/stream`). */
  nextToken?: string | null;
  /** Aborted when the client disconnects: the stream stops without another line. */
  signal: AbortSignal;
}

function line(value: LogStreamLine): string {
  return `${JSON.stringify(value)}\n`;
}

async function readRunStatus(app: AppContext, runId: string): Promise<RunStatus | null> {
  const row = await app.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirst();
  return row ? row.status : null;
}

/**
 * Checks the request (unknown run, bad cursor) before anything is sent, so those errors get
 * the normal JSON error answer, then returns the stream's lines.
 */
export async function openLogStream(
  app: AppContext,
  project: ProjectsTable,
  options: StreamLogsOptions,
): Promise<AsyncGenerator<string, void, undefined>> {
  const cursor = parseLogCursor(options.nextToken);
  const run = await findRunForLogs(app, project, options.runName);
  return streamRunLogs(
    app,
    {
      runId: run.id,
      jobSubmissionId: options.jobSubmissionId,
      startTime: options.startTime,
    },
    cursor,
    options,
  );
}

async function* streamRunLogs(
  app: AppContext,
  filter: LogRowFilter,
  startCursor: LogCursor | null,
  options: StreamLogsOptions,
): AsyncGenerator<string, void, undefined> {
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
  const recheckIntervalMs = options.recheckIntervalMs ?? DEFAULT_RECHECK_INTERVAL_MS;
  const { signal } = options;
  const cursor = startCursor ?? emptyLogCursor();
  const nextToken = () => formatLogCursor(cursor);

  // Set when rows may have arrived since the last read; `wakeUp` ends the current wait early.
  let noticed = false;
  let wakeUp: (() => void) | null = null;
  const unsubscribe = app.logNotifications.subscribe(filter.runId, () => {
    noticed = true;
    wakeUp?.();
  });
  const stop = () => wakeUp?.();
  signal.addEventListener('abort', stop);
  app.signal.addEventListener('abort', stop);
  const waitUpTo = (milliseconds: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, milliseconds));
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      wakeUp = done;
    });

  try {
    // Sent at once so that the client gets the status line and headers without waiting for a log line.
    yield line({ heartbeat: true, next_token: nextToken() });
    let lastLineAt = Date.now();
    for (;;) {
      if (signal.aborted) return;
      if (app.signal.aborted) {
        yield line({ end: 'server_stopping', next_token: nextToken() });
        return;
      }
      noticed = false;
      // Read before the rows: a run seen finished has stored all its logs, so this pass gets the rest.
      const status = await readRunStatus(app, filter.runId);
      for (;;) {
        const rows = await selectLogRows(app, filter, cursor, READ_BATCH);
        if (signal.aborted) return;
        if (rows.length === 0) break;
        yield rows
          .map((row) => line({ ...toLogEvent(row), next_token: advanceLogCursor(cursor, row) }))
          .join('');
        lastLineAt = Date.now();
        if (rows.length < READ_BATCH) break;
      }
      // A run row that vanished (deleted by hand) can get no more logs either.
      if (status === null || isRunFinished(status)) {
        yield line({ end: 'run_finished', status, next_token: nextToken() });
        return;
      }
      const heartbeatDue = lastLineAt + heartbeatIntervalMs;
      if (!noticed && !signal.aborted && !app.signal.aborted) {
        await waitUpTo(Math.min(recheckIntervalMs, heartbeatDue - Date.now()));
      }
      if (Date.now() >= heartbeatDue && !signal.aborted) {
        yield line({ heartbeat: true, next_token: nextToken() });
        lastLineAt = Date.now();
      }
    }
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', stop);
    app.signal.removeEventListener('abort', stop);
  }
}
