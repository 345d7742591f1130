/**
 * `/api/project/{p}/secrets/*`, as dstack names them. Values are for project admins (and global
 * admins) only; members list the names, which is what they need to reference a secret in a run.
 */
import {
  CreateOrUpdateSecretRequestSchema,
  DeleteSecretsRequestSchema,
  GetSecretRequestSchema,
  SecretSchema,
} from '@dstack/core';
import { z } from 'zod';
import { defineRoute, projectContext, type RouteDefinition } from '../http/route.js';
import { createOrUpdateSecret, deleteSecrets, getSecret, listSecrets } from './secrets.js';

export const secretRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/secrets/list',
    summary: "The project's secrets, names only (project members)",
    tags: ['secrets'],
    auth: 'project-member',
    response: z.array(SecretSchema),
    handler: async (ctx) => listSecrets(ctx.app, projectContext(ctx).project),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/secrets/get',
    summary: 'A secret with its value (project admins)',
    tags: ['secrets'],
    auth: 'project-admin',
    body: GetSecretRequestSchema,
    response: SecretSchema,
    handler: async (ctx) => getSecret(ctx.app, projectContext(ctx).project, ctx.body.name),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/secrets/create_or_update',
    summary: 'Create a secret or replace its value (project admins)',
    tags: ['secrets'],
    auth: 'project-admin',
    body: CreateOrUpdateSecretRequestSchema,
    response: SecretSchema,
    handler: async (ctx) =>
      createOrUpdateSecret(ctx.app, projectContext(ctx).project, ctx.body.name, ctx.body.value),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/secrets/delete',
    summary: 'Delete secrets, all or none (project admins)',
    tags: ['secrets'],
    auth: 'project-admin',
    body: DeleteSecretsRequestSchema,
    handler: async (ctx) => {
      await deleteSecrets(ctx.app, projectContext(ctx).project, ctx.body.secrets_names);
      return undefined;
    },
  }),
];
