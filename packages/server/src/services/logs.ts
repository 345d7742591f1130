/**
 * Job logs: stored in the database as the runner reports them (so every server
 * replica can serve them, and nothing is lost across restarts), read back by
 * `logs/poll` in insertion order with an id cursor.
 */
import { type LogEvent, ResourceNotFoundError } from '@dstack/core';
import type { RunnerPullResponse } from '@dstack/runner';
import type { AppContext } from '../context.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';

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
  const run = await app.db
    .selectFrom('runs')
    .select('id')
    .where('project_id', '=', project.id)
    .where('run_name', '=', options.runName)
    .where('deleted', '=', 0)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
  if (!run) throw new ResourceNotFoundError(`Run ${options.runName} not found`);
  let query = app.db.selectFrom('job_logs').selectAll().where('run_id', '=', run.id);
  if (options.jobSubmissionId) query = query.where('job_id', '=', options.jobSubmissionId);
  if (!options.includeRunnerLogs) query = query.where('log_source', '!=', 'runner');
  if (options.startTime) query = query.where('timestamp', '>', Date.parse(options.startTime));
  if (options.endTime) query = query.where('timestamp', '<=', Date.parse(options.endTime));
  const cursor = options.nextToken ? Number(options.nextToken) : null;
  if (cursor !== null && Number.isFinite(cursor)) {
    query = query.where('id', options.descending ? '<' : '>', cursor);
  }
  const rows = await query
    .orderBy('id', options.descending ? 'desc' : 'asc')
    .limit(options.limit)
    .execute();
  const last = rows[rows.length - 1];
  return {
    logs: rows.map((row) => ({
      timestamp: new Date(row.timestamp).toISOString(),
      log_source: row.log_source,
      message: row.message,
    })),
    // The cursor always advances to the last row returned, so followers can keep polling with it.
    next_token: last ? String(last.id) : (options.nextToken ?? null),
  };
}
