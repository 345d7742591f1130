/** `/api/projects/*`. */
import {
  AddMembersRequestSchema,
  CreateProjectRequestSchema,
  DeleteProjectsRequestSchema,
  ProjectSchema,
} from '@dstack/core';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from '../http/route.js';
import {
  addProjectMembers,
  createProject,
  deleteProjects,
  ListProjectsRequestSchema,
  listProjectsForUser,
  ProjectsInfoListSchema,
  removeProjectMembers,
  toProjectModel,
} from './projects.js';

export const projectRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/projects/list',
    summary: "The user's projects (all projects for global admins), as dstack's ListProjectsRequest asks",
    tags: ['projects'],
    auth: 'user',
    body: ListProjectsRequestSchema.optional(),
    response: z.union([z.array(ProjectSchema), ProjectsInfoListSchema]),
    handler: async ({ app, user, body }) => listProjectsForUser(app, user!, body ?? {}),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/create',
    summary: 'Create a project; the creator becomes its admin',
    tags: ['projects'],
    auth: 'user',
    body: CreateProjectRequestSchema,
    response: ProjectSchema,
    handler: async ({ app, user, body }) => createProject(app, user!, body.project_name),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/delete',
    summary: 'Delete projects (project admins)',
    tags: ['projects'],
    auth: 'user',
    body: DeleteProjectsRequestSchema,
    handler: async ({ app, user, body }) => {
      await deleteProjects(app, user!, body.projects_names);
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/{project_name}/get',
    summary: 'A project with its members and backends',
    tags: ['projects'],
    auth: 'project-member',
    response: ProjectSchema,
    handler: async ({ app, project }) => toProjectModel(app, project!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/{project_name}/update',
    summary:
      "Update a project's settings (project admins); this server has no public projects or templates yet",
    tags: ['projects'],
    auth: 'project-admin',
    // dstack's fields, each taking only the value that changes nothing here: a field the server
    // cannot honour is refused, never dropped.
    body: z.object({
      is_public: z.literal(false, { error: 'is_public: public projects are not supported yet' }).nullish(),
      templates_repo: z.null({ error: 'templates_repo: project templates are not supported yet' }).optional(),
      reset_templates_repo: z
        .literal(false, { error: 'reset_templates_repo: project templates are not supported yet' })
        .default(false),
    }),
    response: ProjectSchema,
    handler: async ({ app, project }) => toProjectModel(app, project!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/{project_name}/add_members',
    summary: 'Add members or change their roles (managers: the user role only)',
    tags: ['projects'],
    auth: 'project-manager',
    body: AddMembersRequestSchema,
    response: ProjectSchema,
    handler: async ({ app, project, projectRole, body }) =>
      addProjectMembers(app, { project: project!, role: projectRole! }, body.members),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/projects/{project_name}/remove_members',
    summary: 'Remove members (managers: the user role only)',
    tags: ['projects'],
    auth: 'project-manager',
    body: z.object({ usernames: z.array(z.string().min(1)).min(1) }),
    response: ProjectSchema,
    handler: async ({ app, project, projectRole, body }) =>
      removeProjectMembers(app, { project: project!, role: projectRole! }, body.usernames),
  }),
];
