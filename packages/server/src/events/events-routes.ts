/** `POST /api/events/list`, as dstack names it. */
import { EventSchema, ListEventsRequestSchema } from '@dstack/core';
import { z } from 'zod';
import type { UsersTable } from '../db/schema.js';
import { defineRoute } from '../http/route.js';
import { listEvents } from './events.js';

export const eventRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/events/list',
    summary:
      "Events the user may see (a global admin: all; others: their projects' and their own), newest first; " +
      'the next page starts after `prev_recorded_at` and `prev_id` of the last event',
    tags: ['events'],
    auth: 'user',
    body: ListEventsRequestSchema,
    response: z.array(EventSchema),
    async handler(ctx) {
      return listEvents(ctx.app, ctx.user as UsersTable, ctx.body);
    },
  }),
];
