/**
 * The CLI configuration, `~/.dstack/config.yml`: the projects the user can talk to.
 * `{projects: [{name, url, token, default}]}`, as dstack writes it.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { DstackError } from '@dstack/core';
import { parsePlainConfig } from './plain-config-text.js';

export interface ProjectConfig {
  name: string;
  url: string;
  token: string;
  /** The project used when none is named. */
  default: boolean;
}

export interface CliConfig {
  projects: ProjectConfig[];
}

/** The configuration file is missing a project, or cannot be read. */
export class CliConfigError extends DstackError {
  static override readonly marker: string = '@dstack/cli/CliConfigError';
  override readonly name = 'CliConfigError';
}

/**
 * The file path: `$DSTACK_CLI_CONFIG_DIR/config.yml`, default `$HOME/.dstack/config.yml`.
 */
export function cliConfigPath(environment: NodeJS.ProcessEnv = process.env): string {
  const directory = environment.DSTACK_CLI_CONFIG_DIR || join(environment.HOME || homedir(), '.dstack');
  return join(directory, 'config.yml');
}

function readProject(value: unknown, index: number, path: string): ProjectConfig {
  const entry = (value ?? {}) as Record<string, unknown>;
  for (const field of ['name', 'url', 'token'] as const) {
    if (typeof entry[field] !== 'string' || entry[field] === '') {
      throw new CliConfigError(`${path}: projects[${index}].${field}: expected a non-empty string`);
    }
  }
  return {
    name: entry.name as string,
    url: entry.url as string,
    token: entry.token as string,
    default: entry.default === true,
  };
}

/** Reads the configuration; a missing file is an empty configuration. */
export async function loadCliConfig(path: string = cliConfigPath()): Promise<CliConfig> {
  let text: string;
  try {
    // Read at once: every command starts here, and an asynchronous read is several trips through
    // libuv's thread pool, each a wait for a thread on a busy machine.
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { projects: [] };
    throw new CliConfigError(`${path}: cannot read: ${(error as Error).message}`, { cause: error });
  }
  let data: unknown = parsePlainConfig(text);
  // The YAML parser loads only for a file in another form than `dstack project add` writes.
  try {
    if (data === undefined) data = (await import('yaml')).parse(text);
  } catch (error) {
    throw new CliConfigError(`${path}: invalid YAML: ${(error as Error).message}`, { cause: error });
  }
  const projects = (data as { projects?: unknown } | null)?.projects ?? [];
  if (!Array.isArray(projects)) throw new CliConfigError(`${path}: projects: expected a list`);
  return { projects: projects.map((project, index) => readProject(project, index, path)) };
}

/** Writes the configuration atomically, readable only by the user: it holds tokens. */
export async function saveCliConfig(config: CliConfig, path: string = cliConfigPath()): Promise<void> {
  // Loaded here: node's fs/promises brings readline and the file watchers, which reading needs not.
  const { chmod, mkdir, rename, writeFile } = await import('node:fs/promises');
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  const { stringify } = await import('yaml');
  await writeFile(temporary, stringify(config), { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

/**
 * Adds or replaces the project named `project.name`. The first project, or one added with
 * `default: true`, becomes the only default.
 */
export function upsertProject(config: CliConfig, project: ProjectConfig): CliConfig {
  const others = config.projects.filter((entry) => entry.name !== project.name);
  const makeDefault = project.default || !others.some((entry) => entry.default);
  const added = { ...project, default: makeDefault };
  const exists = others.length !== config.projects.length;
  const projects = exists
    ? config.projects.map((entry) => (entry.name === project.name ? added : entry))
    : [...config.projects, added];
  return {
    projects: projects.map((entry) =>
      makeDefault && entry.name !== project.name ? { ...entry, default: false } : entry,
    ),
  };
}

/**
 * The project to talk to: the one named (`--project` or `DSTACK_PROJECT`), else the default.
 * Throws `CliConfigError` saying how to add one.
 */
export function selectProject(config: CliConfig, name: string | undefined): ProjectConfig {
  if (name) {
    const project = config.projects.find((entry) => entry.name === name);
    if (!project) {
      throw new CliConfigError(
        `project '${name}' is not configured; add it with dstack project add --name ${name} --url URL --token TOKEN`,
      );
    }
    return project;
  }
  const project = config.projects.find((entry) => entry.default) ?? config.projects[0];
  if (!project) {
    throw new CliConfigError(
      'no project is configured; start dstack server or run dstack project add --name NAME --url URL --token TOKEN',
    );
  }
  return project;
}
