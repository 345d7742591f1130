/** `/api/backends/list_types` and `/api/project/{project_name}/backends/*`. */
import { BackendTypeSchema } from '@dstack/core';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from '../http/route.js';
import {
  type BackendConfigInput,
  createProjectBackend,
  deleteProjectBackends,
  listConfigurableTypes,
  listProjectBackends,
  updateProjectBackend,
} from './backends.js';

const BackendInfoSchema = z.object({
  name: z.string(),
  config: z.record(z.string(), z.unknown()).nullable(),
  error: z.string().optional(),
});

/** Checked here only for `type`; the plugin's `backendConfigWithCreds` validates the rest. */
const BackendConfigWithCredsSchema = z.looseObject({ type: BackendTypeSchema });

export const backendRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/backends/list_types',
    summary: 'Backend types the caller can configure (installed backend packages)',
    tags: ['backends'],
    auth: 'user',
    response: z.array(z.string()),
    handler: async ({ app, user }) => listConfigurableTypes(app, user!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/backends/list',
    summary: "The project's backends, without creds",
    tags: ['backends'],
    auth: 'project-member',
    response: z.array(BackendInfoSchema),
    handler: async ({ app, project }) => listProjectBackends(app, project!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/backends/create',
    summary: 'Add a backend; its config and creds are validated by the backend',
    tags: ['backends'],
    auth: 'project-admin',
    body: BackendConfigWithCredsSchema,
    response: BackendInfoSchema,
    handler: async ({ app, user, project, body }) =>
      createProjectBackend(app, user!, project!, body as BackendConfigInput),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/backends/update',
    summary: "Replace a backend's config and creds",
    tags: ['backends'],
    auth: 'project-admin',
    body: BackendConfigWithCredsSchema,
    response: BackendInfoSchema,
    handler: async ({ app, user, project, body }) =>
      updateProjectBackend(app, user!, project!, body as BackendConfigInput),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/backends/delete',
    summary: 'Remove backends by type',
    tags: ['backends'],
    auth: 'project-admin',
    body: z.object({ backends_names: z.array(BackendTypeSchema).min(1) }),
    handler: async ({ app, project, body }) => {
      await deleteProjectBackends(app, project!, body.backends_names);
      return undefined;
    },
  }),
];
