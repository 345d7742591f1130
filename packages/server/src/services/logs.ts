/**
 * Job logs: stored in the database as the runner reports them (so every server
 * replica can serve them, and nothing is lost across restarts), read back by
 * `logs/poll` in insertion order with an id cursor.
 */
import { type LogEvent, ResourceNotFoundError } from '@dstack/core';
import type { RunnerPullResponse } from '@dstack/runner';
import type { Selectable } from 'kysely';
import type { AppContext } from '../context.js';
import type { JobLogsTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { getLogNotifications } from './log-notifications.js';

/** Rows per insert statement (SQLite allows 32766 bound values; 6 columns each). */
const INSERT_BATCH = 500;

export async function storeRunnerLogs(
  app: AppContext,
  job: Pick<JobsTable, 'id' | 'project_id' | 'run_id'>,
  response: Pick<RunnerPullResponse, 'job_logs' | 'runner_logs'>,
): Promise<void> {
  const rows = [
    ...response.job_logs.map((entry) => ({ ...entry, source: entry.source ?? 'stdout' })),
    ...response.runner_logs.map((entry) => ({ ...entry, source: 'runner' as const })),
  ]
    .sort((a, b) => a.timestamp - b.timestamp)
    .map((entry) => ({
      project_id: job.project_id,
      run_id: job.run_id,
      job_id: job.id,
      timestamp: entry.timestamp,
      log_source: entry.source as 'stdout' | 'stderr' | 'runner',
      message: entry.message,
    }));
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    await app.db
      .insertInto('job_logs')
      .values(rows.slice(start, start + INSERT_BATCH))
      .execute();
  }
  // Open `logs/stream` answers of this process push the new rows at once.
  if (rows.length > 0) getLogNotifications(app).notify(job.run_id);
}

/** The newest run named `runName` in `project`, whose logs `logs/poll` and `logs/stream` read. */
export async function findRunForLogs(
  app: AppContext,
  project: ProjectsTable,
  runName: string,
): Promise<Pick<RunsTable, 'id' | 'status'>> {
  const run = await app.db
    .selectFrom('runs')
    .select(['id', 'status'])
    .where('project_id', '=', project.id)
    .where('run_name', '=', runName)
    .where('deleted', '=', 0)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
  if (!run) throw new ResourceNotFoundError(`Run ${runName} not found`);
  return run;
}

export interface LogRowFilter {
  runId: string;
  jobSubmissionId?: string | null;
  startTime?: string | null;
  endTime?: string | null;
  includeRunnerLogs?: boolean;
}

/** Up to `limit` log rows of a run after (or, descending, before) the id `cursor`, in id order. */
export async function selectLogRows(
  app: AppContext,
  filter: LogRowFilter,
  cursor: number | null,
  limit: number,
  descending = false,
): Promise<Array<Selectable<JobLogsTable>>> {
  let query = app.db.selectFrom('job_logs').selectAll().where('run_id', '=', filter.runId);
  if (filter.jobSubmissionId) query = query.where('job_id', '=', filter.jobSubmissionId);
  if (!filter.includeRunnerLogs) query = query.where('log_source', '!=', 'runner');
  if (filter.startTime) query = query.where('timestamp', '>', Date.parse(filter.startTime));
  if (filter.endTime) query = query.where('timestamp', '<=', Date.parse(filter.endTime));
  if (cursor !== null) query = query.where('id', descending ? '<' : '>', cursor);
  return query
    .orderBy('id', descending ? 'desc' : 'asc')
    .limit(limit)
    .execute();
}

/** The API shape of a stored row. */
export function toLogEvent(row: Pick<JobLogsTable, 'timestamp' | 'log_source' | 'message'>): LogEvent {
  return {
    timestamp: new Date(row.timestamp).toISOString(),
    log_source: row.log_source,
    message: row.message,
  };
}

export interface PollLogsOptions {
  runName: string;
  jobSubmissionId?: string | null;
  startTime?: string | null;
  endTime?: string | null;
  descending?: boolean;
  nextToken?: string | null;
  limit: number;
  /** Include the runner's own messages. Default false, as in `dstack logs`. */
  includeRunnerLogs?: boolean;
}

export async function pollLogs(
  app: AppContext,
  project: ProjectsTable,
  options: PollLogsOptions,
): Promise<{ logs: LogEvent[]; next_token: string | null }> {
  const run = await findRunForLogs(app, project, options.runName);
  const cursor = options.nextToken ? Number(options.nextToken) : null;
  const rows = await selectLogRows(
    app,
    {
      runId: run.id,
      jobSubmissionId: options.jobSubmissionId,
      startTime: options.startTime,
      endTime: options.endTime,
      includeRunnerLogs: options.includeRunnerLogs,
    },
    cursor !== null && Number.isFinite(cursor) ? cursor : null,
    options.limit,
    options.descending,
  );
  const last = rows[rows.length - 1];
  return {
    logs: rows.map(toLogEvent),
    // The cursor always advances to the last row returned, so followers can keep polling with it.
    next_token: last ? String(last.id) : (options.nextToken ?? null),
  };
}
