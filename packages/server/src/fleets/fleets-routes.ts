/** `/api/project/{p}/fleets/*` and `/api/project/{p}/instances/list`. */
import {
  ApplyFleetRequestSchema,
  DeleteFleetsRequestSchema,
  FleetSchema,
  GetFleetRequestSchema,
  InstanceSchema,
} from '@dstack/core';
import { z } from 'zod';
import { userActor } from '../events/event-recorder.js';
import { defineRoute, projectContext, SPEC_MAX_BODY_BYTES } from '../http/route.js';
import { applyFleet, deleteFleets, getFleet, listFleets } from './fleets.js';

const tags = ['fleets'];

export const fleetRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/fleets/list',
    summary: "The project's fleets with their instances",
    tags,
    auth: 'project-member',
    body: z
      .object({
        // Fleets imported from other projects (dstack's exports). This server has no imports, so
        // the project's own fleets are the whole answer either way.
        include_imported: z.boolean().default(false),
      })
      .optional(),
    response: z.array(FleetSchema),
    async handler(ctx) {
      return listFleets(ctx.app, projectContext(ctx).project);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/fleets/get',
    summary: 'A fleet by name',
    tags,
    auth: 'project-member',
    body: GetFleetRequestSchema,
    response: FleetSchema,
    async handler(ctx) {
      return getFleet(ctx.app, projectContext(ctx).project, ctx.body);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/fleets/apply',
    summary: 'Create or update a fleet',
    tags,
    auth: 'project-member',
    body: ApplyFleetRequestSchema,
    maxBodyBytes: SPEC_MAX_BODY_BYTES,
    response: FleetSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return applyFleet(ctx.app, project, ctx.body.plan.spec.configuration, userActor(user));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/fleets/delete',
    summary: 'Delete fleets: their idle instances are terminated',
    tags,
    auth: 'project-member',
    body: DeleteFleetsRequestSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      await deleteFleets(ctx.app, project, ctx.body.names, userActor(user));
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/instances/list',
    summary: "The project's instances",
    tags: ['instances'],
    auth: 'project-member',
    body: z.object({}).optional(),
    response: z.array(InstanceSchema),
    async handler(ctx) {
      const fleets = await listFleets(ctx.app, projectContext(ctx).project);
      return fleets.flatMap((fleet) => fleet.instances);
    },
  }),
];
