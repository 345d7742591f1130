/** `/api/project/{p}/logs/poll` and `/api/project/{p}/logs/stream`. */
import {
  LogStreamLineSchema,
  PollLogsRequestSchema,
  PollLogsResponseSchema,
  StreamLogsRequestSchema,
} from '@dstack/core';
import { defineRoute, projectContext } from '../http/route.js';
import { type LogStreamSettings, openLogStream } from './log-stream.js';
import { pollLogs } from './logs.js';

/** The log routes; `settings` tune the stream (tests use short intervals). */
export function createLogRoutes(settings: LogStreamSettings = {}) {
  return [
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
    defineRoute({
      method: 'POST',
      path: '/api/project/{project_name}/logs/stream',
      summary:
        "A run's logs followed to its end, as newline-delimited JSON (application/x-ndjson): " +
        'each line is one LogStreamLine (the schema below): a {heartbeat: true, next_token} line first and ' +
        'after every 15 s without output, one line per log event with the next_token resuming after it, ' +
        'and a last {end: "run_finished", status} line once the run is finished and every line was sent ' +
        '({end: "server_stopping"} when the server shuts down: reconnect with next_token). ' +
        'Errors before the first line (unknown run, bad next_token) are JSON error answers.',
      tags: ['logs'],
      auth: 'project-member',
      body: StreamLogsRequestSchema,
      // The shape of one line, documented under application/x-ndjson in the OpenAPI document.
      response: LogStreamLineSchema,
      responseContentType: 'application/x-ndjson',
      async handler(ctx) {
        const body = ctx.body;
        const lines = await openLogStream(ctx.app, projectContext(ctx).project, {
          ...settings,
          runName: body.run_name,
          jobSubmissionId: body.job_submission_id,
          startTime: body.start_time,
          nextToken: body.next_token,
          signal: ctx.signal,
        });
        return { kind: 'stream', chunks: lines };
      },
    }),
  ];
}

export const logRoutes = createLogRoutes();
