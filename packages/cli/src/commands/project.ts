import { DstackApiClient } from '../api/client.js';
import {
  type CliConfig,
  cliConfigPath,
  loadCliConfig,
  type ProjectConfig,
  saveCliConfig,
  upsertProject,
} from '../config/cli-config.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { formatTable } from '../output/table.js';
import { confirmAction } from './confirm.js';
import { clientSettings } from './connect.js';

export interface ProjectAddOptions {
  name: string;
  url: string;
  token: string;
  /** Replace an existing entry without asking. Default false. */
  yes?: boolean;
  /** Make it the default project. Default: only when it is the first. */
  default?: boolean;
  /** Check the token against the server (`users/get_my_user`). Default true; `--no-check` skips. */
  check?: boolean;
}

/** How long `project list` waits for each server to name the user. */
const USER_LOOKUP_TIMEOUT_MS = 3000;

function sameEntry(left: ProjectConfig, right: ProjectConfig): boolean {
  return left.url === right.url && left.token === right.token;
}

/** `dstack project add`: saves a project, after checking its token unless `--no-check`. */
export async function projectAddCommand(options: ProjectAddOptions, io: CliIo): Promise<number> {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new CommandError(`--url: expected a URL such as http://127.0.0.1:3000, got '${options.url}'`);
  }
  const serverUrl = url.href.replace(/\/+$/, '');
  if (options.check !== false) {
    const client = new DstackApiClient({
      url: serverUrl,
      token: options.token,
      projectName: options.name,
      ...clientSettings(serverUrl, io),
    });
    await client.getMyUser();
  }
  const path = cliConfigPath();
  const config = await loadCliConfig(path);
  const entry: ProjectConfig = {
    name: options.name,
    url: serverUrl,
    token: options.token,
    default: Boolean(options.default),
  };
  const existing = config.projects.find((project) => project.name === options.name);
  if (existing && !sameEntry(existing, entry)) {
    if (
      !(await confirmAction(
        io,
        `Project ${options.name} exists with another URL or token. Replace it?`,
        options.yes,
      ))
    ) {
      return 0;
    }
  }
  await saveCliConfig(
    upsertProject(config, { ...entry, default: entry.default || Boolean(existing?.default) }),
    path,
  );
  io.stdout(`${existing ? 'Updated' : 'Added'} project ${options.name}\n`);
  return 0;
}

async function lookUpUser(project: ProjectConfig): Promise<string> {
  const client = new DstackApiClient({
    url: project.url,
    token: project.token,
    projectName: project.name,
    timeoutMs: USER_LOOKUP_TIMEOUT_MS,
  });
  try {
    return (await client.getMyUser({ signal: AbortSignal.timeout(USER_LOOKUP_TIMEOUT_MS) })).username;
  } catch {
    // An unreachable server or a stale token must not hide the other projects.
    return '-';
  }
}

/** `dstack project list`: NAME URL USER DEFAULT; tokens are never printed. */
export async function projectListCommand(io: CliIo): Promise<number> {
  const config = await loadCliConfig(cliConfigPath());
  const users = await Promise.all(config.projects.map(lookUpUser));
  const rows = config.projects.map((project, index) => [
    project.name,
    project.url,
    users[index] ?? '-',
    project.default ? 'yes' : '',
  ]);
  io.stdout(
    formatTable(['NAME', 'URL', 'USER', 'DEFAULT'], rows, {
      styleHeader: createColors(Boolean(io.stdoutColors)).bold,
    }),
  );
  return 0;
}

function requireProject(config: CliConfig, name: string): ProjectConfig {
  const project = config.projects.find((entry) => entry.name === name);
  if (!project) throw new CommandError(`project '${name}' is not configured; see dstack project list`);
  return project;
}

/** `dstack project set-default NAME`. */
export async function projectSetDefaultCommand(name: string, io: CliIo): Promise<number> {
  const path = cliConfigPath();
  const config = await loadCliConfig(path);
  const project = requireProject(config, name);
  await saveCliConfig(upsertProject(config, { ...project, default: true }), path);
  io.stdout(`Project ${name} is the default\n`);
  return 0;
}

/** `dstack project delete NAME`: removes the entry (the project stays on the server). */
export async function projectDeleteCommand(
  name: string,
  options: { yes?: boolean },
  io: CliIo,
): Promise<number> {
  const path = cliConfigPath();
  const config = await loadCliConfig(path);
  requireProject(config, name);
  if (!(await confirmAction(io, `Delete the project ${name} from the CLI configuration?`, options.yes)))
    return 0;
  await saveCliConfig({ projects: config.projects.filter((project) => project.name !== name) }, path);
  io.stdout(`Deleted project ${name}\n`);
  return 0;
}
