/** `/api/users/*`. */
import {
  CreateUserRequestSchema,
  UpdateUserRequestSchema,
  UserSchema,
  UserWithCredsSchema,
} from '@dstack/core';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from '../http/route.js';
import { addUserPublicKey, deleteUserPublicKeys, listUserPublicKeys } from './user-public-keys.js';
import { refreshUserSshKey, withUserSshKey } from './user-ssh-keys.js';
import {
  createUser,
  deleteUsers,
  getUserForActor,
  listUsers,
  refreshUserToken,
  updateUser,
  withCreds,
} from './users.js';

const UsernameRequestSchema = z.object({ username: z.string().min(1) });

/** dstack's `PublicKeyInfo`. */
const PublicKeyInfoSchema = z.object({
  id: z.string(),
  added_at: z.string(),
  name: z.string(),
  type: z.string(),
  fingerprint: z.string(),
});

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
    // The token is the caller's own, from its request: the server keeps only its hash. dstack's
    // clients take the user's SSH key pair from here (made now for users who have none yet).
    handler: async ({ app, user, token }) => withCreds(await withUserSshKey(app, user!), token!, app),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/refresh_ssh_key',
    summary:
      "Replace a user's SSH key pair (global admins, or the user itself); the answer holds the new private key",
    tags: ['users'],
    auth: 'user',
    body: z.object({ username: z.string().min(1).nullish() }),
    response: UserWithCredsSchema,
    handler: async ({ app, user, body, token }) => {
      const row = await refreshUserSshKey(app, user!, body.username);
      // dstack answers with the user's token too; only the caller's own is known here.
      return withCreds(row, row.id === user!.id ? token! : '', app);
    },
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
  defineRoute({
    method: 'POST',
    path: '/api/users/public_keys/list',
    summary: "The caller's added SSH public keys, newest first",
    tags: ['users'],
    auth: 'user',
    response: z.array(PublicKeyInfoSchema),
    handler: async ({ app, user }) => listUserPublicKeys(app, user!),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/public_keys/add',
    summary: "Add an SSH public key that logs in to the caller's jobs",
    tags: ['users'],
    auth: 'user',
    body: z.object({ key: z.string().min(1).max(16_384), name: z.string().max(100).nullish() }),
    response: PublicKeyInfoSchema,
    handler: async ({ app, user, body }) => addUserPublicKey(app, user!, body.key, body.name),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/users/public_keys/delete',
    summary: "Delete some of the caller's SSH public keys",
    tags: ['users'],
    auth: 'user',
    body: z.object({ ids: z.array(z.uuid()).min(1) }),
    handler: async ({ app, user, body }) => {
      await deleteUserPublicKeys(app, user!, body.ids);
      return undefined;
    },
  }),
];
