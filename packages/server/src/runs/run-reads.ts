/**
 * Reading runs: find one by name, load runs with their job submissions as the API returns them,
 * and `runs/list`'s filters and paging. Which statuses count as active is defined here.
 */

import type { Run, RunStatus } from '@dstack/core';
import type { Kysely } from 'kysely';
import type { AppContext } from '../context.js';
import { requireFound } from '../db/named-resources.js';
import type { Database, InstancesTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { runOf } from './run-models.js';

export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = [
  'pending',
  'submitted',
  'provisioning',
  'running',
  'terminating',
];

/** The newest live (not deleted) run named `runName` in the project. */
export async function findRunRow(
  app: AppContext,
  projectId: string,
  runName: string,
): Promise<RunsTable | null> {
  const row = await app.db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('run_name', '=', runName)
    .where('deleted', '=', 0)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
  return row ?? null;
}

/** The run with all its job submissions, as the API returns it. */
export async function loadRun(
  app: AppContext,
  run: RunsTable,
  project: Pick<ProjectsTable, 'name'>,
): Promise<Run> {
  const [runs] = await loadRuns(app, [run], new Map([[run.project_id, project.name]]));
  return runs as Run;
}

export async function loadRuns(
  app: AppContext,
  runs: readonly RunsTable[],
  projectNames: ReadonlyMap<string, string>,
): Promise<Run[]> {
  if (runs.length === 0) return [];
  const runIds = runs.map((run) => run.id);
  const jobs = await app.db.selectFrom('jobs').selectAll().where('run_id', 'in', runIds).execute();
  const instanceIds = [
    ...new Set(jobs.map((job) => job.instance_id).filter((id): id is string => id !== null)),
  ];
  const instances: InstancesTable[] =
    instanceIds.length > 0
      ? await app.db.selectFrom('instances').selectAll().where('id', 'in', instanceIds).execute()
      : [];
  const instancesById = new Map(instances.map((instance) => [instance.id, instance]));
  const userIds = [...new Set(runs.map((run) => run.user_id))];
  const users = await app.db.selectFrom('users').select(['id', 'name']).where('id', 'in', userIds).execute();
  const userNames = new Map(users.map((user) => [user.id, user.name]));
  const jobsByRun = new Map<string, JobsTable[]>();
  for (const job of jobs) jobsByRun.set(job.run_id, [...(jobsByRun.get(job.run_id) ?? []), job]);
  return runs.map((run) =>
    runOf(
      run,
      projectNames.get(run.project_id) ?? '',
      userNames.get(run.user_id) ?? '',
      jobsByRun.get(run.id) ?? [],
      instancesById,
      app.sshProxy,
    ),
  );
}

export async function getRun(
  app: AppContext,
  project: ProjectsTable,
  selector: { run_name?: string | null; id?: string | null },
): Promise<Run> {
  let row: RunsTable | undefined | null;
  if (selector.id) {
    row = await app.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', project.id)
      .where('id', '=', selector.id)
      .executeTakeFirst();
  } else if (selector.run_name) {
    row = await findRunRow(app, project.id, selector.run_name);
  }
  return loadRun(app, requireFound('Run', selector.run_name ?? selector.id ?? '', row), project);
}

export interface ListRunsOptions {
  projectIds: readonly string[] | null;
  onlyActive: boolean;
  limit: number;
  prevSubmittedAt?: number | null;
  prevRunId?: string | null;
  /** Oldest first (the cursor then pages forward). */
  ascending?: boolean;
  repoId?: string | null;
  username?: string | null;
  /** false: runs without their jobs. */
  includeJobs?: boolean;
  /** The last N submissions of each job; null: all. */
  jobSubmissionsLimit?: number | null;
}

/**
 * `runs/list`'s rows in page order, before the limit. With one project the order comes from
 * `runs_project_id_submitted_at_idx`, so a page reads its rows and no more, however many runs
 * the project keeps.
 */
export function runsListQuery(db: Kysely<Database>, options: ListRunsOptions) {
  let query = db.selectFrom('runs').selectAll('runs').where('runs.deleted', '=', 0);
  if (options.projectIds) query = query.where('runs.project_id', 'in', [...options.projectIds]);
  if (options.onlyActive) query = query.where('runs.status', 'in', [...ACTIVE_RUN_STATUSES]);
  if (options.username != null) {
    query = query.innerJoin('users', 'users.id', 'runs.user_id').where('users.name', '=', options.username);
  }
  const ascending = options.ascending === true;
  if (options.prevSubmittedAt != null) {
    const cursor = options.prevSubmittedAt;
    const prevId = options.prevRunId ?? '';
    const beyond = ascending ? '>' : '<';
    query = query.where((eb) =>
      eb.or([
        eb('runs.submitted_at', beyond, cursor),
        eb.and([eb('runs.submitted_at', '=', cursor), eb('runs.id', beyond, prevId)]),
      ]),
    );
  }
  const direction = ascending ? 'asc' : 'desc';
  return query.orderBy('runs.submitted_at', direction).orderBy('runs.id', direction);
}

export async function listRuns(app: AppContext, options: ListRunsOptions): Promise<Run[]> {
  if (options.projectIds?.length === 0) return [];
  const query = runsListQuery(app.db, options);
  // The repo is inside the run spec JSON: filtered here, before the limit, so pages stay full.
  const repoId = options.repoId;
  const rows =
    repoId == null
      ? await query.limit(options.limit).execute()
      : (await query.execute())
          .filter((row) => (JSON.parse(row.run_spec) as { repo_id?: string | null }).repo_id === repoId)
          .slice(0, options.limit);
  const projects = await app.db
    .selectFrom('projects')
    .select(['id', 'name'])
    .where('id', 'in', [...new Set(rows.map((row) => row.project_id)), ''])
    .execute();
  const runs = await loadRuns(app, rows, new Map(projects.map((project) => [project.id, project.name])));
  return runs.map((run) => trimRunJobs(run, options));
}

/** The run with the jobs and job submissions that `runs/list` asked for. */
function trimRunJobs(run: Run, options: ListRunsOptions): Run {
  if (options.includeJobs === false) return { ...run, jobs: [] };
  const limit = options.jobSubmissionsLimit;
  if (limit == null) return run;
  return {
    ...run,
    jobs: run.jobs.map((job) => ({
      ...job,
      job_submissions: limit === 0 ? [] : job.job_submissions.slice(-limit),
    })),
  };
}
