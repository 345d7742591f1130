import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** How the shim runs jobs: as plain host processes, or in Docker containers. */
export const LOCAL_RUNTIMES = ['process', 'docker'] as const;
export type LocalRuntime = (typeof LOCAL_RUNTIMES)[number];

export const DEFAULT_LOCAL_RUNTIME: LocalRuntime = 'process';

const models = defineBackendConfigModels({
  type: 'local',
  configFields: {
    /** Default `process`. */
    runtime: z
      .enum(LOCAL_RUNTIMES)
      .optional()
      .describe(
        'How the shim runs jobs: `process` (host processes, no isolation) or `docker` (containers; needs a reachable Docker daemon). Absent: `process`.',
      ),
    /** Default `$DSTACK_SERVER_DIR/local-instances`, else `~/.dstack/server/local-instances`. */
    instances_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Where instance homes are created, one directory per instance; `~/` and relative paths are expanded. Absent: `$DSTACK_SERVER_DIR/local-instances`, else `~/.dstack/server/local-instances`.',
      ),
    /** Default `$DSTACK_SERVER_DIR/data/volumes`, else `~/.dstack/server/data/volumes`. */
    volumes_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Where volumes are kept, one directory per volume; `~/` and relative paths are expanded. Absent: `$DSTACK_SERVER_DIR/data/volumes`, else `~/.dstack/server/data/volumes`.',
      ),
  },
  // The host needs no credentials; one empty creds type satisfies the config-model chain.
  credsSchemas: { none: {} },
});

/**
 * Users write `backends: [{type: local}]` without creds (or with `creds: {}`);
 * the chain requires a creds object, so the absent or empty one becomes `{type: none}`.
 */
function withNoneCreds(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const creds = (value as { creds?: unknown }).creds;
  const isEmpty =
    creds == null || (typeof creds === 'object' && !Array.isArray(creds) && Object.keys(creds).length === 0);
  return isEmpty ? { ...value, creds: { type: 'none' } } : value;
}

/** The local backend's config models (dstack's config → with creds → stored → config chain). */
export const localConfigModels = {
  ...models,
  backendConfigWithCreds: z.preprocess(withNoneCreds, models.backendConfigWithCreds),
  config: z.preprocess(withNoneCreds, models.config),
} as typeof models;

/** `backends: [{type: local, runtime?, instances_dir?, volumes_dir?}]` in the server's config.yml. */
export type LocalBackendConfig = z.output<typeof models.backendConfig>;
/** The config as the API receives it; `creds` is optional and empty. */
export type LocalBackendConfigWithCreds = z.output<typeof models.backendConfigWithCreds>;
/** The config the Compute is built from. */
export type LocalConfig = z.output<typeof models.config>;

/** Where instance homes go when the config names no `instances_dir`. */
export function defaultInstancesDir(environment: NodeJS.ProcessEnv = process.env): string {
  const serverDir = environment.DSTACK_SERVER_DIR || join(homedir(), '.dstack', 'server');
  return join(serverDir, 'local-instances');
}

/** Where volumes go when the config names no `volumes_dir`: under the server's data directory. */
export function defaultVolumesDir(environment: NodeJS.ProcessEnv = process.env): string {
  const serverDir = environment.DSTACK_SERVER_DIR || join(homedir(), '.dstack', 'server');
  return join(serverDir, 'data', 'volumes');
}

function absolutePath(path: string): string {
  const expanded = path.startsWith('~/') ? join(homedir(), path.slice(2)) : path;
  return isAbsolute(expanded) ? expanded : resolve(expanded);
}

/** `instances_dir` as an absolute path (relative paths are taken from the working directory). */
export function resolveInstancesDir(instancesDir: string | undefined): string {
  return instancesDir === undefined ? defaultInstancesDir() : absolutePath(instancesDir);
}

/** `volumes_dir` as an absolute path (relative paths are taken from the working directory). */
export function resolveVolumesDir(volumesDir: string | undefined): string {
  return volumesDir === undefined ? defaultVolumesDir() : absolutePath(volumesDir);
}
