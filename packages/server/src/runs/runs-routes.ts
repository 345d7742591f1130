/** `/api/project/{p}/runs/*` and `/api/runs/list`. */
import {
  ApplyRunRequestSchema,
  DeleteRunsRequestSchema,
  GetRunPlanRequestSchema,
  GetRunRequestSchema,
  ListRunsRequestSchema,
  RunPlanSchema,
  RunSchema,
  StopRunsRequestSchema,
} from '@dstack/core';
import { z } from 'zod';
import type { UsersTable } from '../db/schema.js';
import { defineRoute, projectContext, RUN_PLAN_MAX_BODY_BYTES, SPEC_MAX_BODY_BYTES } from '../http/route.js';
import { getRunPlan } from './run-plan.js';
import { getRun, listRuns } from './run-reads.js';
import { applyRun, deleteRuns, stopRuns } from './runs.js';

const tags = ['runs'];

export const runRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/runs/get_plan',
    summary: 'Offers and job specs for a run configuration, without running it',
    tags,
    auth: 'project-member',
    body: GetRunPlanRequestSchema,
    maxBodyBytes: RUN_PLAN_MAX_BODY_BYTES,
    response: RunPlanSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return getRunPlan(ctx.app, project, user, ctx.body.run_spec, ctx.body.max_offers, {
        forOffersOnly: ctx.body.for_offers_only,
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/runs/apply',
    summary: 'Submit a run',
    tags,
    auth: 'project-member',
    body: ApplyRunRequestSchema,
    maxBodyBytes: SPEC_MAX_BODY_BYTES,
    response: RunSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      // dstack's own client (it sends X-API-VERSION) attaches by polling: see attach-window.ts.
      return applyRun(ctx.app, project, user, ctx.body.plan.run_spec, {
        attachesByPolling: ctx.clientApiVersion !== null,
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/runs/get',
    summary: 'A run by name or id, with all job submissions',
    tags,
    auth: 'project-member',
    body: GetRunRequestSchema,
    response: RunSchema,
    async handler(ctx) {
      const { project } = projectContext(ctx);
      return getRun(ctx.app, project, ctx.body);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/runs/stop',
    summary: 'Stop runs (gracefully, or abort)',
    tags,
    auth: 'project-member',
    body: StopRunsRequestSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      await stopRuns(ctx.app, project, user, ctx.body.runs_names, ctx.body.abort);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/runs/delete',
    summary: 'Delete finished runs',
    tags,
    auth: 'project-member',
    body: DeleteRunsRequestSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      await deleteRuns(ctx.app, project, user, ctx.body.runs_names);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/runs/list',
    summary: "Runs of the user's projects, newest first",
    tags,
    auth: 'user',
    body: ListRunsRequestSchema,
    response: z.array(RunSchema),
    async handler(ctx) {
      const user = ctx.user as UsersTable;
      const members = ctx.app.db
        .selectFrom('projects')
        .select('projects.id')
        .where('projects.deleted', '=', 0);
      const scoped =
        user.global_role === 'admin'
          ? members
          : members
              .innerJoin('members', 'members.project_id', 'projects.id')
              .where('members.user_id', '=', user.id);
      const filtered = ctx.body.project_name
        ? scoped.where('projects.name', '=', ctx.body.project_name)
        : scoped;
      const projectIds = (await filtered.execute()).map((row) => row.id);
      return listRuns(ctx.app, {
        projectIds,
        onlyActive: ctx.body.only_active,
        limit: ctx.body.limit,
        prevSubmittedAt: ctx.body.prev_submitted_at ? Date.parse(ctx.body.prev_submitted_at) : null,
        prevRunId: ctx.body.prev_run_id,
        ascending: ctx.body.ascending,
        repoId: ctx.body.repo_id,
        username: ctx.body.username,
        includeJobs: ctx.body.include_jobs,
        jobSubmissionsLimit: ctx.body.job_submissions_limit,
      });
    },
  }),
];
