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
  listProjectsForUser,
  removeProjectMembers,
  toProjectModel,
} from './projects.js';

export const projectRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/projects/list',
    summary: "The user's projects (all projects for global admins)",
    tags: ['projects'],
    auth: 'user',
    response: z.array(ProjectSchema),
    handler: async ({ app, user }) => listProjectsForUser(app, user!),
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
