/**
 * The server's users, projects and members as its HTTP API answers them (`users/*`, `projects/*`,
 * `server/get_info`). Shared by the server (validation, OpenAPI) and the CLI (parsing answers).
 */
import * as z from 'zod';
import { DateTimeSchema } from './api-wire.js';
import { BackendTypeSchema } from './backend-type.js';

export const ProjectRoleSchema = z.enum(['admin', 'manager', 'user']);
export type ProjectRole = z.output<typeof ProjectRoleSchema>;
export const GlobalRoleSchema = z.enum(['admin', 'user']);
export type GlobalRole = z.output<typeof GlobalRoleSchema>;

/** What a user may do beyond their roles (dstack's `UserPermissions`). */
export const UserPermissionsSchema = z.object({ can_create_projects: z.boolean() });

export const UserSchema = z.object({
  id: z.string(),
  username: z.string(),
  global_role: GlobalRoleSchema,
  created_at: DateTimeSchema,
  /** dstack's clients require it; this server keeps no e-mail addresses (always null). */
  email: z.string().nullish(),
  active: z.boolean().default(true),
  permissions: UserPermissionsSchema.default({ can_create_projects: true }),
  /** The user's own SSH key (authorized_keys line), which dstack's clients log in to jobs with. */
  ssh_public_key: z.string().nullish(),
});
export type User = z.output<typeof UserSchema>;

/**
 * A user with their token (`users/create`, `refresh_token`, `get_my_user`: the token is never
 * stored in clear) and, for `get_my_user` and `refresh_ssh_key`, their SSH private key.
 */
export const UserWithCredsSchema = UserSchema.extend({
  creds: z.object({ token: z.string() }),
  ssh_private_key: z.string().nullish(),
});
export type UserWithCreds = z.output<typeof UserWithCredsSchema>;

/** What a member may do in the project (dstack's `MemberPermissions`). */
export const MemberPermissionsSchema = z.object({
  can_manage_ssh_fleets: z.boolean(),
  can_manage_secrets: z.boolean().default(false),
});

export const MemberSchema = z.object({
  user: UserSchema,
  project_role: ProjectRoleSchema,
  permissions: MemberPermissionsSchema.default({ can_manage_ssh_fleets: false, can_manage_secrets: false }),
});
export type Member = z.output<typeof MemberSchema>;

export const ProjectSchema = z.object({
  project_id: z.string(),
  project_name: z.string(),
  owner: UserSchema,
  created_at: DateTimeSchema,
  /**
   * The configured backends. `config` is the backend's config without creds; dstack's clients
   * require it (and accept any `type` there), so it carries at least the wire type.
   */
  backends: z
    .array(z.object({ name: BackendTypeSchema, config: z.looseObject({ type: z.string() }).optional() }))
    .default([]),
  members: z.array(MemberSchema).default([]),
  is_public: z.boolean().default(false),
  templates_repo: z.string().nullish(),
});
export type Project = z.output<typeof ProjectSchema>;

export const ServerInfoSchema = z.object({ server_version: z.string().nullable() });
