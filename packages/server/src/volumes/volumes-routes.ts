/** `/api/project/{p}/volumes/*` and `/api/volumes/list`, as dstack names them. */
import {
  CreateVolumeRequestSchema,
  DeleteVolumesRequestSchema,
  GetVolumeRequestSchema,
  ListVolumesRequestSchema,
  VolumeSchema,
} from '@dstack/core';
import { z } from 'zod';
import type { UsersTable } from '../db/schema.js';
import { userActor } from '../events/event-recorder.js';
import { defineRoute, projectContext } from '../http/route.js';
import { createVolume, deleteVolumes, getVolume, listProjectVolumes, listVolumes } from './volumes.js';

const tags = ['volumes'];

export const volumeRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/volumes/list',
    summary: "The project's volumes",
    tags,
    auth: 'project-member',
    body: z.object({}).optional(),
    response: z.array(VolumeSchema),
    async handler(ctx) {
      return listProjectVolumes(ctx.app, projectContext(ctx).project);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/volumes/get',
    summary: 'A volume by name',
    tags,
    auth: 'project-member',
    body: GetVolumeRequestSchema,
    response: VolumeSchema,
    async handler(ctx) {
      return getVolume(ctx.app, projectContext(ctx).project, ctx.body.name);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/volumes/create',
    summary: 'Create a volume (size) or register an existing one (volume_id)',
    tags,
    auth: 'project-member',
    body: CreateVolumeRequestSchema,
    response: VolumeSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return createVolume(ctx.app, project, user, ctx.body.configuration);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/volumes/delete',
    summary: 'Delete volumes; refused while one is attached to a run',
    tags,
    auth: 'project-member',
    body: DeleteVolumesRequestSchema,
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      await deleteVolumes(ctx.app, project, ctx.body.names, userActor(user));
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/volumes/list',
    summary: "Volumes of the user's projects, newest first",
    tags,
    auth: 'user',
    body: ListVolumesRequestSchema,
    response: z.array(VolumeSchema),
    async handler(ctx) {
      const user = ctx.user as UsersTable;
      const projects = ctx.app.db
        .selectFrom('projects')
        .select('projects.id')
        .where('projects.deleted', '=', 0);
      const scoped =
        user.global_role === 'admin'
          ? projects
          : projects
              .innerJoin('members', 'members.project_id', 'projects.id')
              .where('members.user_id', '=', user.id);
      const filtered = ctx.body.project_name
        ? scoped.where('projects.name', '=', ctx.body.project_name)
        : scoped;
      return listVolumes(ctx.app, {
        projectIds: (await filtered.execute()).map((row) => row.id),
        onlyActive: ctx.body.only_active,
        prevCreatedAt: ctx.body.prev_created_at ? Date.parse(ctx.body.prev_created_at) : null,
        prevId: ctx.body.prev_id ?? null,
        limit: ctx.body.limit,
        ascending: ctx.body.ascending,
      });
    },
  }),
];
