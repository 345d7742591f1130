/**
 * Backends that run jobs on the server's own host (a plugin with `runsOnServerHost`, the
 * local backend). A job there runs as the server's user, beside its database, config.yml
 * and keys, so only global admins may configure such a backend, and only in projects a
 * global admin owns: the project's members then run jobs there by that admin's decision.
 * A project created by a plain user never gets one, whoever asks.
 */
import type { BackendPlugin } from '@dstack/core';
import type { Kysely } from 'kysely';
import type { Database, UsersTable } from '../db/schema.js';
import { ForbiddenError } from '../security/access-errors.js';

/** What these checks read: the database (an `AppContext`, or the backend registry's host). */
interface DatabaseHolder {
  readonly db: Kysely<Database>;
}

/**
 * Why the project may not use the host backend `plugin`, or null when it may (or when the
 * backend runs elsewhere). The owner is read now: a deleted owner counts as no admin.
 */
export async function hostBackendOwnerProblem(
  app: DatabaseHolder,
  projectId: string,
  plugin: BackendPlugin,
): Promise<string | null> {
  if (!plugin.runsOnServerHost) return null;
  const project = await app.db
    .selectFrom('projects')
    .leftJoin('users', 'users.id', 'projects.owner_id')
    .select(['projects.name as projectName', 'users.name as ownerName', 'users.global_role as ownerRole'])
    .where('projects.id', '=', projectId)
    .executeTakeFirst();
  if (project?.ownerRole === 'admin') return null;
  const owner = project?.ownerName
    ? `is owned by "${project.ownerName}", who is not a global admin`
    : 'has no owner any more (the user was deleted)';
  return `The "${plugin.type}" backend runs jobs on the server's own host; project "${project?.projectName ?? projectId}" ${owner}, so it cannot use it`;
}

/**
 * Refuses (ForbiddenError, HTTP 403) a host backend configured by a user who is not a
 * global admin, or in a project whose owner is not one.
 */
export async function assertMayConfigureBackend(
  app: DatabaseHolder,
  actor: UsersTable,
  projectId: string,
  plugin: BackendPlugin,
): Promise<void> {
  if (!plugin.runsOnServerHost) return;
  if (actor.global_role !== 'admin') {
    throw new ForbiddenError(
      `Only global admins can configure the "${plugin.type}" backend: it runs jobs on the server's own host`,
    );
  }
  const problem = await hostBackendOwnerProblem(app, projectId, plugin);
  if (problem) throw new ForbiddenError(problem);
}
