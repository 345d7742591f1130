/** What one pipeline pass over a job shares, and the job and run rows it reads and marks. */

import type { Kysely } from 'kysely';
import type { AppContext } from '../context.js';
import type { Database, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import type { RowLock } from '../pipelines/pipeline.js';
import { inReleaseGroup } from '../pipelines/release-groups.js';

/** What the steps of one pipeline pass over a job share: the job-submitted and job-running passes extend it. */
export interface JobPassContext {
  app: AppContext;
  job: JobsTable;
  lock: RowLock<'jobs'>;
  run: RunsTable;
  project: ProjectsTable;
}

export async function runRowOf(app: AppContext, runId: string): Promise<RunsTable> {
  return app.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
}

/** Makes the run due now and wakes the run pipeline: its status follows its jobs. */
export async function markRunDue(app: AppContext, runId: string): Promise<void> {
  const mark = (db: Kysely<Database>) =>
    db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', runId).execute();
  // It follows a release: on SQLite it shares that turn's commit (release-groups.ts).
  await inReleaseGroup(app.db, app.dialect, mark);
  app.wakeUps.wake('runs');
}
