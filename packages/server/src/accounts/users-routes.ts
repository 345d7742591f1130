/** `/api/users/*`. */
import {
  CreateUserRequestSchema,
  UpdateUserRequestSchema,
  UserSchema,
  UserWithCredsSchema,
} from '@dstack/core';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from '../http/route.js';
import {
  createUser,
  deleteUsers,
  getUserForActor,
  listUsers,
  refreshUserToken,
  toUserModel,
  updateUser,
} from './users.js';

const UsernameRequestSchema = z.object({ username: z.string().min(1) });

export const userRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/users/list',
    summary: 'List users (global admins see all, others themselves)',
    tags: ['users'],
    auth: 'user',
    response: z.array(UserSchema),
    handler: async ({ app, user }) => listUsers(app, user!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/get_my_user',
    summary: 'The user of the token, with the token (as dstack answers)',
    tags: ['users'],
    auth: 'user',
    response: UserWithCredsSchema,
    // The token is the caller's own, from its request: the server keeps only its hash.
    handler: async ({ user, token }) => ({ ...toUserModel(user!), creds: { token: token! } }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/get_user',
    summary: 'A user by name (global admins, or the user itself)',
    tags: ['users'],
    auth: 'user',
    body: UsernameRequestSchema,
    response: UserSchema,
    handler: async ({ app, user, body }) => getUserForActor(app, user!, body.username),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/create',
    summary: 'Create a user; the answer holds its token, shown only once',
    tags: ['users'],
    auth: 'admin',
    body: CreateUserRequestSchema,
    response: UserWithCredsSchema,
    handler: async ({ app, body }) => createUser(app, body),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/refresh_token',
    summary: "Replace a user's token (global admins, or the user itself)",
    tags: ['users'],
    auth: 'user',
    body: UsernameRequestSchema,
    response: UserWithCredsSchema,
    handler: async ({ app, user, body }) => refreshUserToken(app, user!, body.username),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/update',
    summary: "Set a user's global role and whether they may sign in (active: false deactivates)",
    tags: ['users'],
    auth: 'admin',
    body: UpdateUserRequestSchema,
    response: UserSchema,
    handler: async ({ app, user, body }) => updateUser(app, user!, body),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/delete',
    summary: 'Delete users',
    tags: ['users'],
    auth: 'admin',
    body: z.object({ users: z.array(z.string().min(1)).min(1) }),
    handler: async ({ app, user, body }) => {
      await deleteUsers(app, user!, body.users);
      return undefined;
    },
  }),
];
