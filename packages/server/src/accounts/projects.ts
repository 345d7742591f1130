/**
 * Projects and their members. Every project has an SSH key pair the server
 * uses to reach its instances (private half encrypted at rest). Non-members
 * get the same "Access denied" whether a project exists or not.
 */
import { randomUUID } from 'node:crypto';
import {
  isValidProjectName,
  PROJECT_NAME_RULE,
  type Project,
  ProjectSchema,
  ResourceNotFoundError,
  ServerClientError,
} from '@dstack/core';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { generateProjectSshKeyPair } from '../agents/ssh-keys.js';
import type { AppContext, SqlDialect } from '../context.js';
import type { Database, ProjectsTable, UsersTable } from '../db/schema.js';
import type { ProjectRole } from '../http/route.js';
import { wireBackendType } from '../http/wire-backend-type.js';
import { ForbiddenError } from '../security/access-errors.js';
import { toUserModel } from './users.js';

export interface ProjectAccess {
  project: ProjectsTable;
  /** The user's role; global admins count as project admins. */
  role: ProjectRole;
}

const ROLE_RANK: Record<ProjectRole, number> = { user: 0, manager: 1, admin: 2 };

/** Whether `role` is at least `required`. */
export function hasProjectRole(role: ProjectRole, required: ProjectRole): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[required];
}

/** The live (not deleted) project named `projectName`. */
export async function findProject(app: AppContext, projectName: string): Promise<ProjectsTable | undefined> {
  return app.db
    .selectFrom('projects')
    .selectAll()
    .where('name', '=', projectName)
    .where('deleted', '=', 0)
    .executeTakeFirst();
}

/**
 * The project and the user's role in it. Global admins get any existing project
 * (ResourceNotFoundError otherwise); anyone else gets ForbiddenError "Access denied"
 * unless they are a member — also when the project does not exist.
 */
export async function getProjectForUser(
  app: AppContext,
  user: UsersTable,
  projectName: string,
): Promise<ProjectAccess> {
  const project = await findProject(app, projectName);
  if (user.global_role === 'admin') {
    if (!project) throw new ResourceNotFoundError(`Project "${projectName}" does not exist`);
    return { project, role: 'admin' };
  }
  if (!project) throw new ForbiddenError();
  const member = await app.db
    .selectFrom('members')
    .select('project_role')
    .where('project_id', '=', project.id)
    .where('user_id', '=', user.id)
    .executeTakeFirst();
  if (!member) throw new ForbiddenError();
  return { project, role: member.project_role };
}

/**
 * What a member may do, as dstack reports it: managers and admins manage SSH fleets, admins
 * manage secrets (the secrets routes check the same role).
 */
function memberPermissions(role: ProjectRole): {
  can_manage_ssh_fleets: boolean;
  can_manage_secrets: boolean;
} {
  return {
    can_manage_ssh_fleets: hasProjectRole(role, 'manager'),
    can_manage_secrets: hasProjectRole(role, 'admin'),
  };
}

/** The API model: owner, members and configured backend types. */
export async function toProjectModel(app: AppContext, project: ProjectsTable): Promise<Project> {
  const [owner, members, backends] = await Promise.all([
    app.db.selectFrom('users').selectAll().where('id', '=', project.owner_id).executeTakeFirst(),
    app.db
      .selectFrom('members')
      .innerJoin('users', 'users.id', 'members.user_id')
      .selectAll('users')
      .select('members.project_role')
      .where('members.project_id', '=', project.id)
      .orderBy('users.name')
      .execute(),
    app.db
      .selectFrom('backends')
      .select('type')
      .where('project_id', '=', project.id)
      .orderBy('type')
      .execute(),
  ]);
  const ownerModel = owner
    ? toUserModel(owner)
    : // The owner was deleted; the project stays usable by its other members.
      {
        id: project.owner_id,
        username: '',
        global_role: 'user' as const,
        created_at: new Date(0).toISOString(),
        email: null,
        active: false,
        permissions: { can_create_projects: false },
        ssh_public_key: null,
      };
  return {
    project_id: project.id,
    project_name: project.name,
    owner: ownerModel,
    created_at: new Date(project.created_at).toISOString(),
    backends: backends.map((backend) => ({
      name: backend.type,
      config: { type: wireBackendType(backend.type) },
    })),
    members: members.map(({ project_role, ...user }) => ({
      user: toUserModel(user),
      project_role,
      permissions: memberPermissions(project_role),
    })),
    is_public: false,
    templates_repo: null,
  };
}

/**
 * dstack's `ListProjectsRequest` (its Python API's `projects.list()` sends `include_not_joined`).
 * `include_not_joined` adds public projects the user has not joined; this server has no public
 * projects, so it changes nothing yet. Paging by `prev_created_at`/`prev_id` and `ascending` are
 * refused rather than ignored: a client paging would otherwise loop on the same page.
 */
export const ListProjectsRequestSchema = z.object({
  include_not_joined: z.boolean().default(true),
  return_total_count: z.boolean().default(false),
  name_pattern: z
    .string()
    .regex(/^[a-zA-Z0-9-_]*$/, { error: 'name_pattern: only letters, digits, - and _' })
    .nullish(),
  prev_created_at: z.null({ error: 'prev_created_at: paging projects is not supported yet' }).optional(),
  prev_id: z.null({ error: 'prev_id: paging projects is not supported yet' }).optional(),
  limit: z.number().int().min(0).max(2000).default(2000),
  ascending: z.null({ error: 'ascending: ordering projects is not supported yet' }).optional(),
});
export type ListProjectsRequest = z.input<typeof ListProjectsRequestSchema>;

/** dstack's `ProjectsInfoList`: the answer when `return_total_count` is set. */
export const ProjectsInfoListSchema = z.object({
  total_count: z.number().int().nullable(),
  projects: z.array(ProjectSchema),
});

/**
 * The projects the user may see (dstack's `list_user_accessible_projects`): all projects for global
 * admins, else the user's own (plus public ones with `include_not_joined`, none here). A list, or
 * with `return_total_count` the list with the count of all matches before `limit`.
 */
export async function listProjectsForUser(
  app: AppContext,
  user: UsersTable,
  request: ListProjectsRequest = {},
): Promise<Project[] | z.output<typeof ProjectsInfoListSchema>> {
  const { return_total_count, name_pattern, limit } = ListProjectsRequestSchema.parse(request);
  let query = app.db
    .selectFrom('projects')
    .selectAll('projects')
    .where('projects.deleted', '=', 0)
    .orderBy('projects.name');
  if (user.global_role !== 'admin') {
    query = query
      .innerJoin('members', 'members.project_id', 'projects.id')
      .where('members.user_id', '=', user.id);
  }
  const pattern = name_pattern?.toLowerCase();
  // Names are few and short: matched here, as dstack's ILIKE does, the same on SQLite and Postgres.
  const matching = (await query.execute()).filter(
    (project) => !pattern || project.name.toLowerCase().includes(pattern),
  );
  const projects = await Promise.all(matching.slice(0, limit).map((project) => toProjectModel(app, project)));
  return return_total_count ? { total_count: matching.length, projects } : projects;
}

/** Inserts a project with a new SSH key pair and the owner as its admin. */
async function insertProject(
  app: AppContext,
  owner: UsersTable,
  projectName: string,
): Promise<ProjectsTable> {
  const keys = generateProjectSshKeyPair();
  const project: ProjectsTable = {
    id: randomUUID(),
    name: projectName,
    owner_id: owner.id,
    ssh_private_key: app.encryption.encrypt(keys.privateKey),
    ssh_public_key: keys.publicKey,
    created_at: Date.now(),
    deleted: 0,
  };
  await app.db.transaction().execute(async (transaction) => {
    await transaction.insertInto('projects').values(project).execute();
    await transaction
      .insertInto('members')
      .values({ project_id: project.id, user_id: owner.id, project_role: 'admin' })
      .execute();
  });
  return project;
}

/**
 * Creates a project owned by `user`, who becomes its admin. Non-admins may
 * create projects unless config.yml `default_permissions.allow_non_admins_create_projects` is false.
 */
export async function createProject(
  app: AppContext,
  user: UsersTable,
  projectName: string,
): Promise<Project> {
  if (user.global_role !== 'admin' && app.defaultPermissions?.allow_non_admins_create_projects === false) {
    throw new ForbiddenError('Only global admins can create projects on this server');
  }
  if (!isValidProjectName(projectName)) {
    throw new ServerClientError(`project name must be ${PROJECT_NAME_RULE}`, {
      code: 'invalid_request',
      fields: [['project_name']],
    });
  }
  if (await findProject(app, projectName)) {
    throw new ServerClientError(`Project "${projectName}" already exists`, {
      code: 'resource_exists',
      fields: [['project_name']],
    });
  }
  return toProjectModel(app, await insertProject(app, user, projectName));
}

/** The project `projectName`, created (owned by `owner`) if missing; for start-up. */
export async function ensureProject(
  app: AppContext,
  owner: UsersTable,
  projectName: string,
): Promise<ProjectsTable> {
  const existing = await findProject(app, projectName);
  if (existing) return existing;
  try {
    return await insertProject(app, owner, projectName);
  } catch (error) {
    // Another server process starting on the same database created it first.
    const raced = await findProject(app, projectName);
    if (!raced) throw error;
    return raced;
  }
}

/**
 * Deletes projects (soft: runs and instances keep their history). The caller
 * must be an admin of each. Names are freed for new projects.
 */
export async function deleteProjects(
  app: AppContext,
  user: UsersTable,
  projectNames: readonly string[],
): Promise<void> {
  const accesses = [];
  for (const name of projectNames) {
    const access = await getProjectForUser(app, user, name);
    if (!hasProjectRole(access.role, 'admin')) throw new ForbiddenError();
    accesses.push(access);
  }
  for (const { project } of accesses) {
    await app.db
      .updateTable('projects')
      .set({ deleted: 1, name: `${project.name}_deleted_${project.id}` })
      .where('id', '=', project.id)
      .execute();
    app.backends.invalidate(project.id);
  }
}

/**
 * Adds members or changes their roles. Project managers may manage members
 * with the `user` role only; admins may grant any role.
 */
export async function addProjectMembers(
  app: AppContext,
  access: ProjectAccess,
  members: ReadonlyArray<{ username: string; project_role: ProjectRole }>,
): Promise<Project> {
  const users = await app.db
    .selectFrom('users')
    .selectAll()
    .where(
      'name',
      'in',
      members.map((member) => member.username),
    )
    .execute();
  const current = await app.db
    .selectFrom('members')
    .selectAll()
    .where('project_id', '=', access.project.id)
    .execute();
  for (const [index, member] of members.entries()) {
    const user = users.find((row) => row.name === member.username);
    if (!user) {
      throw new ServerClientError(`User "${member.username}" does not exist`, {
        code: 'resource_not_exists',
        fields: [['members', String(index), 'username']],
      });
    }
    const existingRole = current.find((row) => row.user_id === user.id)?.project_role;
    if (
      access.role !== 'admin' &&
      (member.project_role !== 'user' || (existingRole && existingRole !== 'user'))
    ) {
      throw new ForbiddenError('Only project admins can grant or change the manager and admin roles');
    }
  }
  await app.db.transaction().execute(async (transaction) => {
    for (const member of members) {
      const user = users.find((row) => row.name === member.username)!;
      await transaction
        .deleteFrom('members')
        .where('project_id', '=', access.project.id)
        .where('user_id', '=', user.id)
        .execute();
      await transaction
        .insertInto('members')
        .values({ project_id: access.project.id, user_id: user.id, project_role: member.project_role })
        .execute();
    }
  });
  return toProjectModel(app, access.project);
}

/** Removes members; managers may remove `user` members only. The last admin cannot be removed. */
export async function removeProjectMembers(
  app: AppContext,
  access: ProjectAccess,
  usernames: readonly string[],
): Promise<Project> {
  const current = await app.db
    .selectFrom('members')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select(['members.user_id', 'members.project_role', 'users.name'])
    .where('members.project_id', '=', access.project.id)
    .execute();
  const removed = current.filter((member) => usernames.includes(member.name));
  const notMembers = usernames.filter((name) => !current.some((member) => member.name === name));
  if (notMembers.length > 0) {
    throw new ServerClientError(`Not members of project "${access.project.name}": ${notMembers.join(', ')}`, {
      code: 'resource_not_exists',
      fields: [['usernames']],
    });
  }
  if (access.role !== 'admin' && removed.some((member) => member.project_role !== 'user')) {
    throw new ForbiddenError('Only project admins can remove managers and admins');
  }
  const admins = current.filter((member) => member.project_role === 'admin');
  if (admins.length > 0 && admins.every((admin) => removed.includes(admin))) {
    throw new ServerClientError('A project must keep at least one admin', { fields: [['usernames']] });
  }
  if (removed.length > 0) {
    await app.db
      .deleteFrom('members')
      .where('project_id', '=', access.project.id)
      .where(
        'user_id',
        'in',
        removed.map((member) => member.user_id),
      )
      .execute();
  }
  return toProjectModel(app, access.project);
}

/** How long the pipelines reuse a project row: its name and SSH keys never change, and every pass needs them. */
const PROJECT_CACHE_MS = 10_000;

export async function projectOf(app: AppContext, projectId: string): Promise<ProjectsTable> {
  const cache = app.caches.projects.rows;
  const cached = cache.get(projectId);
  if (cached && cached.expiresAt > Date.now()) return cached.row;
  const row = await app.db
    .selectFrom('projects')
    .selectAll()
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  cache.set(projectId, { row, expiresAt: Date.now() + PROJECT_CACHE_MS });
  return row;
}

/**
 * Makes the transaction's check-then-insert of a project's named resources (volumes, gateways) one
 * at a time per project: on Postgres by locking the project's row until the transaction ends;
 * SQLite's write transactions are one at a time already.
 */
export async function serializeProjectWrites(
  transaction: Kysely<Database>,
  dialect: SqlDialect,
  projectId: string,
): Promise<void> {
  if (dialect !== 'postgres') return;
  await transaction.selectFrom('projects').select('id').where('id', '=', projectId).forUpdate().execute();
}
