/** `/api/project/{p}/fleets/*` and `/api/project/{p}/instances/list|get`. */
import {
  ApplyFleetRequestSchema,
  DeleteFleetsRequestSchema,
  FleetSchema,
  GetFleetPlanRequestSchema,
  GetFleetRequestSchema,
  InstanceOfferWithAvailabilitySchema,
  InstanceSchema,
} from '@dstack/core';
import { z } from 'zod';
import { userActor } from '../events/event-recorder.js';
import { defineRoute, projectContext, SPEC_MAX_BODY_BYTES } from '../http/route.js';
import {
  applyFleet,
  deleteFleetInstances,
  deleteFleets,
  getFleet,
  getFleetPlan,
  getInstance,
  listFleets,
} from './fleets.js';

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
    path: '/api/project/{project_name}/fleets/get_plan',
    summary: 'What applying a fleet spec would do: the offers for its instances, the fleet it would update',
    tags,
    auth: 'project-member',
    body: GetFleetPlanRequestSchema,
    maxBodyBytes: SPEC_MAX_BODY_BYTES,
    response: z.looseObject({ offers: z.array(InstanceOfferWithAvailabilitySchema) }),
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return getFleetPlan(ctx.app, project, user, ctx.body.spec);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/fleets/delete_instances',
    summary: "Terminate some of a fleet's instances, by number",
    tags,
    auth: 'project-member',
    body: z.object({
      name: z.string().min(1),
      instance_nums: z.array(z.number().int().nonnegative()).min(1),
    }),
    async handler(ctx) {
      await deleteFleetInstances(ctx.app, projectContext(ctx).project, ctx.body.name, ctx.body.instance_nums);
      return undefined;
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
      const { spec } = ctx.body.plan;
      return applyFleet(ctx.app, project, spec.configuration, {
        profile: spec.profile,
        actor: userActor(user),
      });
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
    path: '/api/project/{project_name}/instances/get',
    summary: "One of the project's instances, by id",
    tags: ['instances'],
    auth: 'project-member',
    body: z.object({ id: z.uuid() }),
    response: InstanceSchema,
    async handler(ctx) {
      return getInstance(ctx.app, projectContext(ctx).project, ctx.body.id);
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
