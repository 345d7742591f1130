/** `/api/project/{p}/logs/poll`. */
import { PollLogsRequestSchema, PollLogsResponseSchema } from '@dstack/core';
import { defineRoute } from '../http/route.js';
import { pollLogs } from '../services/logs.js';
import { projectContext } from './runs-routes.js';

export const logRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/logs/poll',
    summary: "A page of a run's logs, oldest first; pass next_token back to continue",
    tags: ['logs'],
    auth: 'project-member',
    body: PollLogsRequestSchema,
    response: PollLogsResponseSchema,
    async handler(ctx) {
      const body = ctx.body;
      return pollLogs(ctx.app, projectContext(ctx).project, {
        runName: body.run_name,
        jobSubmissionId: body.job_submission_id,
        startTime: body.start_time,
        endTime: body.end_time,
        descending: body.descending,
        nextToken: body.next_token,
        limit: body.limit,
      });
    },
  }),
];
