/**
 * Which server, token and project a command talks to: `DSTACK_SERVER_URL` and `DSTACK_TOKEN`
 * (CI, no config file) or `~/.dstack/config.yml`, with dstack's rules and messages
 * (`core/services/api_client.py`, `get_api_client`).
 */
import { CliConfigError, cliConfigPath, loadCliConfig, selectProject } from './cli-config.js';

export const SERVER_URL_VARIABLE = 'DSTACK_SERVER_URL';
export const TOKEN_VARIABLE = 'DSTACK_TOKEN';
export const PROJECT_VARIABLE = 'DSTACK_PROJECT';

export interface ProjectConnection {
  url: string;
  token: string;
  projectName: string;
}

/**
 * Both variables set: they win over the file, and the project must be named (`--project` or
 * `DSTACK_PROJECT`), since there is no default to fall back on. Otherwise the file's project,
 * with `DSTACK_TOKEN` alone overriding its token; `DSTACK_SERVER_URL` alone is an error only
 * when the file has no such project, as in dstack.
 */
export async function resolveProjectConnection(
  projectName: string | undefined,
  environment: NodeJS.ProcessEnv = process.env,
): Promise<ProjectConnection> {
  const named = projectName || environment[PROJECT_VARIABLE] || undefined;
  const serverUrl = environment[SERVER_URL_VARIABLE];
  const token = environment[TOKEN_VARIABLE];
  if (serverUrl !== undefined && token !== undefined) {
    if (named === undefined) {
      throw new CliConfigError(
        `${SERVER_URL_VARIABLE} and ${TOKEN_VARIABLE} are set, but the project is not specified. Set ${PROJECT_VARIABLE} or use --project`,
      );
    }
    return { url: serverUrl, token, projectName: named };
  }
  const config = await loadCliConfig(cliConfigPath(environment));
  const configured = named
    ? config.projects.find((entry) => entry.name === named)
    : (config.projects.find((entry) => entry.default) ?? config.projects[0]);
  if (configured === undefined && serverUrl !== undefined) {
    throw new CliConfigError(`${SERVER_URL_VARIABLE} is set, but ${TOKEN_VARIABLE} is not set`);
  }
  const project = configured ?? selectProject(config, named);
  return { url: project.url, token: token ?? project.token, projectName: project.name };
}
