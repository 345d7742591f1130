/**
 * The models of a project, as dstack's model endpoint sees them: one per service run that
 * declares `model` and has not finished. A service that is still starting is listed (its
 * requests get the service proxy's 503 with `Retry-After` until a replica runs), so a client
 * sees the same set whatever the replicas are doing. Two runs serving the same name: the most
 * recently submitted wins, as in dstack.
 */
import type { ServiceConfiguration } from '@dstack/core';
import type { AppContext } from '../context.js';
import { runSpecOf } from '../db/json-columns.js';
import type { RunsTable } from '../db/schema.js';
import { ACTIVE_RUN_STATUSES } from '../runs/run-reads.js';
import { serviceConfigurationOf } from '../services/service-spec.js';

export interface ProjectModel {
  /** The name clients put in a request's `model`. */
  name: string;
  run: RunsTable;
  service: ServiceConfiguration;
  /** Where the OpenAI-compatible API starts on the replica: `/v1` by default, no trailing slash. */
  prefix: string;
}

/** A model's `prefix` as a path to put endpoints after: one leading slash, none trailing (`/` is empty). */
export function modelPathPrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? '' : `/${trimmed}`;
}

/** The model a service run declares, or null (not a service, no `model`). */
export function modelOfRun(run: RunsTable): ProjectModel | null {
  const service = serviceConfigurationOf(runSpecOf(run));
  const model = service?.model;
  if (!service || !model) return null;
  // The tgi format is refused at apply (runs/unsupported-fields.ts); its runs are not models here.
  if (model.format !== 'openai') return null;
  return { name: model.name, run, service, prefix: modelPathPrefix(model.prefix) };
}

/** The project's models, one per name (the newest run's), sorted by name. */
export async function listProjectModels(app: AppContext, projectId: string): Promise<ProjectModel[]> {
  const runs = await app.db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('status', 'in', [...ACTIVE_RUN_STATUSES])
    .orderBy('submitted_at', 'desc')
    .execute();
  const byName = new Map<string, ProjectModel>();
  for (const run of runs) {
    const model = modelOfRun(run);
    if (model && !byName.has(model.name)) byName.set(model.name, model);
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
