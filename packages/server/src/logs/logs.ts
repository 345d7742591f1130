/**
 * Job logs: stored in the database as the runner reports them (so every server
 * replica can serve them, and nothing is lost across restarts), read back by
 * `logs/poll` and `logs/stream` in insertion order with a per-job id cursor.
 */
import { type LogEvent, ResourceNotFoundError } from '@dstack/core';
import type { RunnerPullResponse } from '@dstack/core/agent-protocol';
import { type Selectable, sql } from 'kysely';
import type { AppContext } from '../context.js';
import type { JobLogsTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { findRunRow } from '../runs/run-reads.js';
import {
  advanceLogCursor,
  emptyLogCursor,
  formatLogCursor,
  type LogCursor,
  parseLogCursor,
} from './log-cursor.js';

/** Rows per insert statement (SQLite allows 32766 bound values; 7 columns each). */
const INSERT_BATCH = 500;

/**
 * Stores the logs of a runner's pull answer. Idempotent: an entry whose position the job's log
 * already has (the same batch pulled by another replica, or again after a failover) is skipped.
 */
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
      position: entry.position ?? null,
    }));
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    await app.db
      .insertInto('job_logs')
      .values(rows.slice(start, start + INSERT_BATCH))
      .onConflict((conflict) => conflict.columns(['job_id', 'position']).doNothing())
      .execute();
  }
  // Open `logs/stream` answers of this process push the new rows at once.
  if (rows.length > 0) app.logNotifications.notify(job.run_id);
}

/** The newest run named `runName` in `project`, whose logs `logs/poll` and `logs/stream` read. */
export async function findRunForLogs(
  app: AppContext,
  project: ProjectsTable,
  runName: string,
): Promise<Pick<RunsTable, 'id' | 'status'>> {
  const run = await findRunRow(app, project.id, runName);
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

/** Jobs per statement: SQLite allows 500 terms in one compound select. */
const JOBS_PER_STATEMENT = 100;

/**
 * The job submissions with logs in run `runId`, one index seek each (a loose index scan on
 * `job_logs (run_id, job_id, id)`) rather than a read of every row of the run.
 */
async function selectRunJobIds(app: AppContext, runId: string): Promise<string[]> {
  const result = await sql<{ job_id: string }>`
    with recursive run_jobs(job_id) as (
      select (select job_id from job_logs where run_id = ${runId} order by job_id limit 1)
      union all
      select (
        select job_id from job_logs
        where run_id = ${runId} and job_id > run_jobs.job_id
        order by job_id limit 1
      )
      from run_jobs where run_jobs.job_id is not null
    )
    select job_id from run_jobs where job_id is not null`.execute(app.db);
  return result.rows.map((row) => row.job_id);
}

/**
 * Up to `limit` log rows of a run after (or, descending, before) `cursor`, in id order: for each
 * job, the rows past that job's own cursor (see log-cursor.ts for why per job). Each job is its
 * own index range read, so a follower at the end of a long run reads only the new rows.
 */
export async function selectLogRows(
  app: AppContext,
  filter: LogRowFilter,
  cursor: LogCursor | null,
  limit: number,
  descending = false,
): Promise<Array<Selectable<JobLogsTable>>> {
  const direction = descending ? 'desc' : 'asc';
  const jobIds = filter.jobSubmissionId ? [filter.jobSubmissionId] : await selectRunJobIds(app, filter.runId);
  const jobRows = (jobId: string) => {
    let query = app.db
      .selectFrom('job_logs')
      .selectAll()
      .where('run_id', '=', filter.runId)
      .where('job_id', '=', jobId);
    if (!filter.includeRunnerLogs) query = query.where('log_source', '!=', 'runner');
    if (filter.startTime) query = query.where('timestamp', '>', Date.parse(filter.startTime));
    if (filter.endTime) query = query.where('timestamp', '<=', Date.parse(filter.endTime));
    const after = cursor ? (cursor.jobs.get(jobId) ?? cursor.floor) : null;
    if (after !== null) query = query.where('id', descending ? '<' : '>', after);
    // Wrapped: SQLite takes ORDER BY and LIMIT only on a whole compound select, not on its terms.
    return app.db.selectFrom(query.orderBy('id', direction).limit(limit).as('job_rows')).selectAll();
  };
  const rows: Array<Selectable<JobLogsTable>> = [];
  for (let start = 0; start < jobIds.length; start += JOBS_PER_STATEMENT) {
    const [first, ...rest] = jobIds.slice(start, start + JOBS_PER_STATEMENT).map(jobRows);
    if (!first) break;
    const union = rest.reduce((all, next) => all.unionAll(next), first);
    rows.push(
      ...(await app.db
        .selectFrom(union.as('page'))
        .selectAll()
        .orderBy('id', direction)
        .limit(limit)
        .execute()),
    );
  }
  const order = descending ? -1 : 1;
  return rows.sort((a, b) => order * (Number(a.id) - Number(b.id))).slice(0, limit);
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
): Promise<{ logs: LogEvent[]; next_token: string | null; cursor: string | null }> {
  const cursor = parseLogCursor(options.nextToken);
  const run = await findRunForLogs(app, project, options.runName);
  const rows = await selectLogRows(
    app,
    {
      runId: run.id,
      jobSubmissionId: options.jobSubmissionId,
      startTime: options.startTime,
      endTime: options.endTime,
      includeRunnerLogs: options.includeRunnerLogs,
    },
    cursor,
    options.limit,
    options.descending,
  );
  const next = cursor ?? emptyLogCursor();
  for (const row of rows) advanceLogCursor(next, row);
  const after = formatLogCursor(next);
  return {
    logs: rows.map(toLogEvent),
    // Only a full page may have more after it; a shorter one is the end for now, which dstack's
    // client learns from a null token (it polls until then).
    next_token: rows.length >= options.limit ? after : null,
    // The cursor always advances past the rows returned, so followers can keep polling with it.
    cursor: after,
  };
}
