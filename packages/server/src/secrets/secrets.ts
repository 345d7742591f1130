/**
 * Project secrets (dstack's `secrets` table): values encrypted at rest with the server's
 * encryption, names unique per project. Project admins read and change values; members see the
 * names only, so that they can reference them in a configuration (`${{ secrets.NAME }}`).
 */
import { randomUUID } from 'node:crypto';
import {
  isValidSecretName,
  ResourceNotFoundError,
  SECRET_NAME_RULE,
  SECRET_VALUE_MAX_LENGTH,
  type Secret,
  ServerClientError,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import type { ProjectsTable, SecretsTable } from '../db/schema.js';

function toSecretModel(app: AppContext, row: SecretsTable, includeValue: boolean): Secret {
  return { id: row.id, name: row.name, value: includeValue ? app.encryption.decrypt(row.value) : null };
}

function secretNotFound(name: string): ResourceNotFoundError {
  return new ResourceNotFoundError(`Secret "${name}" does not exist in this project`);
}

/** The project's secrets, newest first, without their values (`secrets/list`). */
export async function listSecrets(app: AppContext, project: ProjectsTable): Promise<Secret[]> {
  const rows = await app.db
    .selectFrom('secrets')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('created_at', 'desc')
    .orderBy('name')
    .execute();
  return rows.map((row) => toSecretModel(app, row, false));
}

/** One secret with its value; ResourceNotFoundError naming it when the project has none of that name. */
export async function getSecret(app: AppContext, project: ProjectsTable, name: string): Promise<Secret> {
  const row = await app.db
    .selectFrom('secrets')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (!row) throw secretNotFound(name);
  return toSecretModel(app, row, true);
}

/** Checks a name and value as dstack does, naming the field (the route's schema checks the same). */
function validateSecret(name: string, value: string): void {
  if (!isValidSecretName(name)) {
    throw new ServerClientError(`name: secret name must be ${SECRET_NAME_RULE}`, { fields: [['name']] });
  }
  if (value.length > SECRET_VALUE_MAX_LENGTH) {
    throw new ServerClientError(`value: secret value must be at most ${SECRET_VALUE_MAX_LENGTH} characters`, {
      fields: [['value']],
    });
  }
}

/** Creates the secret, or replaces the value of the one of that name (`secrets/create_or_update`). */
export async function createOrUpdateSecret(
  app: AppContext,
  project: ProjectsTable,
  name: string,
  value: string,
): Promise<Secret> {
  validateSecret(name, value);
  const now = Date.now();
  // One statement, so two requests at once for a new name leave one row (the later value wins).
  await app.db
    .insertInto('secrets')
    .values({
      id: randomUUID(),
      project_id: project.id,
      name,
      value: app.encryption.encrypt(value),
      created_at: now,
      updated_at: now,
    })
    .onConflict((conflict) =>
      conflict.columns(['project_id', 'name']).doUpdateSet((update) => ({
        value: update.ref('excluded.value'),
        updated_at: update.ref('excluded.updated_at'),
      })),
    )
    .execute();
  return getSecret(app, project, name);
}

/** Deletes the named secrets, all or none: a name the project lacks is a 404 naming it. */
export async function deleteSecrets(
  app: AppContext,
  project: ProjectsTable,
  names: readonly string[],
): Promise<void> {
  await app.db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('secrets')
      .select('name')
      .where('project_id', '=', project.id)
      .where('name', 'in', [...names])
      .execute();
    const found = new Set(existing.map((row) => row.name));
    const missing = [...new Set(names)].filter((name) => !found.has(name));
    if (missing.length === 1) throw secretNotFound(missing[0]!);
    if (missing.length > 1) {
      throw new ResourceNotFoundError(
        `Secrets ${missing.map((name) => `"${name}"`).join(', ')} do not exist in this project`,
      );
    }
    await trx
      .deleteFrom('secrets')
      .where('project_id', '=', project.id)
      .where('name', 'in', [...names])
      .execute();
  });
}

/** The names of the project's secrets (for checking a run's references before it is accepted). */
export async function projectSecretNames(app: AppContext, projectId: string): Promise<Set<string>> {
  const rows = await app.db
    .selectFrom('secrets')
    .select('name')
    .where('project_id', '=', projectId)
    .execute();
  return new Set(rows.map((row) => row.name));
}

/**
 * The project's secrets, decrypted, by name: only for what is handed to the job's agents, never
 * stored or returned by the API.
 */
export async function projectSecretValues(app: AppContext, projectId: string): Promise<Map<string, string>> {
  const rows = await app.db
    .selectFrom('secrets')
    .select(['name', 'value'])
    .where('project_id', '=', projectId)
    .execute();
  return new Map(rows.map((row) => [row.name, app.encryption.decrypt(row.value)]));
}
