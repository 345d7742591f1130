/**
 * What the server makes sure of at start: the `admin` user, the projects of
 * config.yml with their backends (config.yml is the source of truth for the
 * projects it lists), and the default project `main`.
 */
import { ConfigurationError, InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { ensureProject } from '../accounts/projects.js';
import { ensureAdminUser } from '../accounts/users.js';
import { prepareBackendRecord, storeBackendRecord } from '../backends/backends.js';
import { hostBackendOwnerProblem } from '../backends/host-backends.js';
import type { AppContext } from '../context.js';
import type { ServerConfig, ServerConfigFile } from './server-config.js';

export const DEFAULT_PROJECT_NAME = 'main';

export interface ServerStateResult {
  /**
   * The admin token, to print at every start: generated, given by `DSTACK_SERVER_ADMIN_TOKEN`, or
   * kept (encrypted) from an earlier start. Null when no token is kept (see `ensureAdminUser`).
   */
  adminToken: string | null;
}

function isConfigFile(config: ServerConfig | ServerConfigFile): config is ServerConfigFile {
  return 'errorAt' in config;
}

/**
 * Creates the admin user and the config.yml projects, and syncs each listed
 * project's backends (validated by their configurators, creds encrypted;
 * backends no longer listed are removed). Pass the `ServerConfigFile` from
 * `loadServerConfig` so that errors point at config.yml lines.
 */
export async function initializeServerState(
  app: AppContext,
  config: ServerConfig | ServerConfigFile,
): Promise<ServerStateResult> {
  const file = isConfigFile(config) ? config : undefined;
  const serverConfig: ServerConfig = isConfigFile(config) ? config.config : config;
  app.defaultPermissions = serverConfig.default_permissions;
  const { user: admin, adminToken } = await ensureAdminUser(app, app.settings.adminToken);

  for (const [projectIndex, projectConfig] of serverConfig.projects.entries()) {
    const project = await ensureProject(app, admin, projectConfig.name);
    for (const [backendIndex, entry] of projectConfig.backends.entries()) {
      // A listed project may be one a plain user created: config.yml cannot hand it the server's host.
      const plugin = await app.backends.getPlugin(entry.type);
      const refused = await hostBackendOwnerProblem(app, project.id, plugin);
      if (refused) {
        const at = ['projects', projectIndex, 'backends', backendIndex, 'type'];
        throw file ? file.errorAt(at, refused) : new ConfigurationError(refused, { path: at });
      }
      let record: { config: string; auth: string };
      try {
        record = await prepareBackendRecord(app, project.name, entry, 'server_config');
      } catch (error) {
        if (!file || !ServerClientError.isInstance(error)) throw error;
        // Point at the field the configurator named (e.g. creds.api_key), else at the entry.
        const field = InvalidCredentialsError.isInstance(error) ? (error.fields[0] ?? []) : [];
        throw file.errorAt(
          ['projects', projectIndex, 'backends', backendIndex, ...field],
          error.message,
          error,
        );
      }
      await storeBackendRecord(app, project.id, entry.type, record);
    }
    const listed = projectConfig.backends.map((entry) => entry.type);
    let stale = app.db.deleteFrom('backends').where('project_id', '=', project.id);
    if (listed.length > 0) stale = stale.where('type', 'not in', listed);
    await stale.execute();
  }
  app.backends.invalidate();

  await ensureProject(app, admin, DEFAULT_PROJECT_NAME);
  return { adminToken };
}
