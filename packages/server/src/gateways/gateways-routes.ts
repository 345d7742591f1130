/** `/api/project/{p}/gateways/*`, with dstack's shapes. */

import {
  CreateGatewayRequestSchema,
  DeleteGatewaysRequestSchema,
  GatewaySchema,
  GetGatewayRequestSchema,
  ListGatewaysRequestSchema,
  ServerClientError,
  SetDefaultGatewayRequestSchema,
  SetWildcardDomainRequestSchema,
} from '@dstack/core';
import { z } from 'zod';
import { userActor } from '../events/event-recorder.js';
import { defineRoute, projectContext } from '../http/route.js';
import {
  createGateway,
  deleteGateways,
  getGateway,
  listProjectGateways,
  setDefaultGateway,
  setGatewayWildcardDomain,
} from './gateways.js';

const tags = ['gateways'];

export const gatewayRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/list',
    summary: "The project's gateways",
    tags,
    auth: 'project-member',
    body: ListGatewaysRequestSchema.optional(),
    response: z.array(GatewaySchema),
    async handler(ctx) {
      return listProjectGateways(ctx.app, projectContext(ctx).project);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/get',
    summary: 'A gateway by name',
    tags,
    auth: 'project-member',
    body: GetGatewayRequestSchema,
    response: GatewaySchema,
    async handler(ctx) {
      return getGateway(ctx.app, projectContext(ctx).project, ctx.body.name);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/create',
    summary: 'Create a gateway; its pipeline launches it',
    tags,
    auth: 'project-admin',
    body: CreateGatewayRequestSchema,
    response: GatewaySchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return createGateway(ctx.app, project, user, ctx.body.configuration);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/delete',
    summary: 'Delete gateways; their instances are terminated',
    tags,
    auth: 'project-admin',
    body: DeleteGatewaysRequestSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      await deleteGateways(ctx.app, project, ctx.body.names, userActor(user));
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/set_default',
    summary: "Make a gateway the project's default",
    tags,
    auth: 'project-admin',
    body: SetDefaultGatewayRequestSchema,
    async handler(ctx) {
      const { project } = projectContext(ctx);
      if (ctx.body.gateway_project && ctx.body.gateway_project !== project.name) {
        throw new ServerClientError('gateway_project: gateways of other projects are not supported yet', {
          fields: [['gateway_project']],
        });
      }
      await setDefaultGateway(ctx.app, project, ctx.body.name);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gateways/set_wildcard_domain',
    summary: "Set a gateway's wildcard domain (services applied afterwards use it)",
    tags,
    auth: 'project-admin',
    body: SetWildcardDomainRequestSchema,
    response: GatewaySchema,
    async handler(ctx) {
      return setGatewayWildcardDomain(
        ctx.app,
        projectContext(ctx).project,
        ctx.body.name,
        ctx.body.wildcard_domain,
      );
    },
  }),
];
