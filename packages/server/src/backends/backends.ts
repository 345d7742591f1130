/**
 * A project's backends: validated with the plugin's schema and configurator,
 * stored as config JSON plus encrypted creds, and listed without creds.
 */
import { randomUUID } from 'node:crypto';
import {
  type BackendConfigOrigin,
  ResourceNotFoundError,
  ServerClientError,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import type { BackendsTable, ProjectsTable, UsersTable } from '../db/schema.js';
import { assertMayConfigureBackend, hostBackendOwnerProblem } from './host-backends.js';
import { runUntrustedValidation, unreachableField } from './untrusted-validation.js';

export interface BackendInfo {
  /** The backend type. */
  name: string;
  /** The config without creds; null when the backend's plugin cannot be loaded. */
  config: Record<string, unknown> | null;
  /** Why the backend cannot be used, when it cannot. */
  error?: string;
}

/** A backend config with creds, as users send it or write it in config.yml. */
export type BackendConfigInput = { type: string } & Record<string, unknown>;

/**
 * What a config may reach on the server's behalf, by where it came from: config.yml is the
 * admin's own file; an API request is any project admin's, and may use the server's own cloud
 * identity or custom endpoints only when the admin's settings allow it (for every caller, global
 * admins included: an admin who wants them without the settings writes them in config.yml).
 */
function validateConfigOptions(app: AppContext, origin: BackendConfigOrigin): ValidateConfigOptions {
  const { defaultCredsEnabled } = app.settings.backends;
  if (origin === 'server_config') {
    return { origin, defaultCredsEnabled, customEndpointsAllowed: true };
  }
  return {
    origin,
    defaultCredsEnabled: defaultCredsEnabled && app.settings.backends.allowDefaultCredsInApi,
    customEndpointsAllowed: app.settings.backends.allowCustomEndpoints,
  };
}

/**
 * Validates a config with the plugin's `backendConfigWithCreds` schema (a ZodError,
 * answered as 400 naming the field) and its configurator, and builds the record to store.
 * A config from the API is checked within `backendValidationDeadlineMs`, and a failure to reach
 * the provider is one generic 400 (see untrusted-validation.ts).
 */
export async function prepareBackendRecord(
  app: AppContext,
  projectName: string,
  input: BackendConfigInput,
  origin: BackendConfigOrigin,
): Promise<{ config: string; auth: string }> {
  const plugin = await app.backends.getPlugin(input.type);
  const config = plugin.configSchemas.backendConfigWithCreds.parse(input);
  const configurator = plugin.createConfigurator();
  const options = validateConfigOptions(app, origin);
  const build = async (signal?: AbortSignal) => {
    await configurator.validateConfig(config, { ...options, ...(signal ? { signal } : {}) });
    return configurator.createBackend(projectName, config);
  };
  const record =
    origin === 'server_config'
      ? await build()
      : await runUntrustedValidation(build, {
          deadlineMs: app.settings.backends.validationDeadlineMs,
          field: unreachableField(input),
          logError: (message) => console.error(`[dstack-server] ${message}`),
        });
  return { config: record.config, auth: app.encryption.encrypt(record.auth) };
}

async function findBackend(
  app: AppContext,
  projectId: string,
  type: string,
): Promise<BackendsTable | undefined> {
  return app.db
    .selectFrom('backends')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .executeTakeFirst();
}

/** Inserts or replaces the project's backend of `type` with an already prepared record. */
export async function storeBackendRecord(
  app: AppContext,
  projectId: string,
  type: string,
  record: { config: string; auth: string },
): Promise<void> {
  // An upsert: two servers starting on one database sync the same config.yml at once.
  await app.db
    .insertInto('backends')
    .values({ id: randomUUID(), project_id: projectId, type, ...record, created_at: Date.now() })
    .onConflict((conflict) => conflict.columns(['project_id', 'type']).doUpdateSet(record))
    .execute();
  app.backends.invalidate(projectId);
}

/**
 * The backend types `user` may configure: every installed or registered one for a global admin;
 * for others, those whose jobs do not run on the server's own host (see host-backends.ts).
 */
export async function listConfigurableTypes(app: AppContext, user: UsersTable): Promise<string[]> {
  const types = await app.backends.listAvailableTypes();
  if (user.global_role === 'admin') return types;
  const plugins = await Promise.all(types.map((type) => app.backends.getPlugin(type).catch(() => null)));
  return types.filter((_, index) => plugins[index]?.runsOnServerHost !== true);
}

/** The project's backends without creds. */
export async function listProjectBackends(app: AppContext, project: ProjectsTable): Promise<BackendInfo[]> {
  const rows = await app.db
    .selectFrom('backends')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('type')
    .execute();
  const registry = app.backends;
  return Promise.all(
    rows.map(async (row): Promise<BackendInfo> => {
      try {
        const plugin = await registry.getPlugin(row.type);
        // Creds are not needed to describe the config; don't decrypt them for a listing.
        const config = plugin.createConfigurator().getBackendConfigWithoutCreds({
          projectId: project.id,
          backendId: row.id,
          config: row.config,
          auth: '{}',
        });
        const refused = await hostBackendOwnerProblem(app, project.id, plugin);
        return {
          name: row.type,
          config: config as Record<string, unknown>,
          ...(refused ? { error: refused } : {}),
        };
      } catch (error) {
        return { name: row.type, config: null, error: (error as Error).message };
      }
    }),
  );
}

/** The config without creds of one backend, as the API returns it after create/update. */
async function describeBackend(app: AppContext, project: ProjectsTable, type: string): Promise<BackendInfo> {
  const backends = await listProjectBackends(app, project);
  return backends.find((backend) => backend.name === type)!;
}

/** Adds a backend to the project; fails when one of the same type exists. */
export async function createProjectBackend(
  app: AppContext,
  actor: UsersTable,
  project: ProjectsTable,
  input: BackendConfigInput,
): Promise<BackendInfo> {
  await assertMayConfigureBackend(app, actor, project.id, await app.backends.getPlugin(input.type));
  if (await findBackend(app, project.id, input.type)) {
    throw new ServerClientError(`Backend "${input.type}" already exists in project "${project.name}"`, {
      code: 'resource_exists',
      fields: [['type']],
    });
  }
  await storeBackendRecord(
    app,
    project.id,
    input.type,
    await prepareBackendRecord(app, project.name, input, 'api'),
  );
  return describeBackend(app, project, input.type);
}

/** Replaces the config and creds of an existing backend. */
export async function updateProjectBackend(
  app: AppContext,
  actor: UsersTable,
  project: ProjectsTable,
  input: BackendConfigInput,
): Promise<BackendInfo> {
  await assertMayConfigureBackend(app, actor, project.id, await app.backends.getPlugin(input.type));
  if (!(await findBackend(app, project.id, input.type))) {
    throw new ResourceNotFoundError(`Backend "${input.type}" does not exist in project "${project.name}"`);
  }
  await storeBackendRecord(
    app,
    project.id,
    input.type,
    await prepareBackendRecord(app, project.name, input, 'api'),
  );
  return describeBackend(app, project, input.type);
}

/** Removes backends by type; all named backends must exist. */
export async function deleteProjectBackends(
  app: AppContext,
  project: ProjectsTable,
  types: readonly string[],
): Promise<void> {
  const rows = await app.db
    .selectFrom('backends')
    .select(['id', 'type'])
    .where('project_id', '=', project.id)
    .where('type', 'in', [...types])
    .execute();
  const missing = types.filter((type) => !rows.some((row) => row.type === type));
  if (missing.length > 0) {
    throw new ResourceNotFoundError(
      `Backends do not exist in project "${project.name}": ${missing.join(', ')}`,
    );
  }
  await app.db
    .deleteFrom('backends')
    .where(
      'id',
      'in',
      rows.map((row) => row.id),
    )
    .execute();
  app.backends.invalidate(project.id);
}
