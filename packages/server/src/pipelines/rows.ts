/** Small row helpers shared by the pipelines. */
import type { JobProvisioningData, JobSpec } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { InstancesTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import type { RowLock } from './pipeline.js';

/** What the steps of one pipeline pass over a job share: the job-submitted and job-running passes extend it. */
export interface JobPassContext {
  app: AppContext;
  job: JobsTable;
  lock: RowLock;
  run: RunsTable;
  project: ProjectsTable;
}

/** `last_processed_at` that makes a row due again in `ms` (pipelines process rows older than their interval). */
export function dueIn(ms: number, minIntervalMs: number): number {
  return Date.now() - minIntervalMs + ms;
}

/** How long the pipelines reuse a project row: its name and SSH keys never change, and every pass needs them. */
const PROJECT_CACHE_MS = 10_000;

export async function projectOf(app: AppContext, projectId: string): Promise<ProjectsTable> {
  const cache = app.caches.projects;
  const cached = cache.get(projectId);
  if (cached && cached.expiresAt > Date.now()) return cached.row;
  const row = await app.db
    .selectFrom('projects')
    .selectAll()
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  cache.set(projectId, { row, expiresAt: Date.now() + PROJECT_CACHE_MS });
  return row;
}

export async function runRowOf(app: AppContext, runId: string): Promise<RunsTable> {
  return app.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
}

export async function instanceRowOf(
  app: AppContext,
  instanceId: string | null,
): Promise<InstancesTable | null> {
  if (!instanceId) return null;
  return (
    (await app.db.selectFrom('instances').selectAll().where('id', '=', instanceId).executeTakeFirst()) ?? null
  );
}

export function jobSpecOf(job: JobsTable): JobSpec {
  return JSON.parse(job.job_spec_data) as JobSpec;
}

export function provisioningDataOf(row: {
  job_provisioning_data: string | null;
}): JobProvisioningData | null {
  return row.job_provisioning_data ? (JSON.parse(row.job_provisioning_data) as JobProvisioningData) : null;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Makes the run due now and wakes the run pipeline: its status follows its jobs. */
export async function markRunDue(app: AppContext, runId: string): Promise<void> {
  await app.db.updateTable('runs').set({ last_processed_at: 0 }).where('id', '=', runId).execute();
  app.wakeUps.wake('runs');
}

/** Makes the starting jobs of an instance due now: the instance came up, or went away. */
export async function markInstanceJobsDue(app: AppContext, instanceId: string): Promise<void> {
  await app.db
    .updateTable('jobs')
    .set({ last_processed_at: 0 })
    .where('instance_id', '=', instanceId)
    .where('status', 'in', ['provisioning', 'pulling', 'running'])
    .execute();
  app.wakeUps.wake('jobs-running');
}
