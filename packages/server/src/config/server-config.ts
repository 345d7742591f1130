/**
 * `~/.dstack/server/config.yml`: the projects and backends the server keeps
 * in sync at start, and the encryption keys. Written with a default (project
 * `main`, the local backend when installed, a new AES key) when missing,
 * readable by the server's user only.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type BackendPlugin, type ConfigurationError, projectNameSchema } from '@dstack/core';
import { z } from 'zod';
import { loadBackendPlugin } from '../backends/discovery.js';
import { decodeAesSecret, EncryptionError, generateAesKey } from '../security/encryption.js';
import {
  makeOwnerOnlyDirectory,
  OWNER_ONLY_FILE_MODE,
  restrictToOwner,
} from '../security/owner-only-files.js';
import {
  errorAtPath,
  type ParsedYamlFile,
  parseYamlFile,
  zodIssuesToConfigurationError,
} from './yaml-location.js';

const LOCAL_BACKEND_TYPE = 'local';

/** A backend entry as written: its `type` plus fields its plugin validates. */
const BackendEntrySchema = z.looseObject({ type: z.string().min(1) });
export type BackendEntry = z.output<typeof BackendEntrySchema>;

const ProjectEntrySchema = z.strictObject({
  name: projectNameSchema,
  backends: z
    .array(BackendEntrySchema)
    .nullish()
    .transform((backends) => backends ?? []),
});

const EncryptionKeySchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('aes'), name: z.string().min(1), secret: z.string().min(1) }),
  z.strictObject({ type: z.literal('identity') }),
]);

const DefaultPermissionsSchema = z.strictObject({
  /** Whether users without the global admin role may create projects (dstack's default: true). */
  allow_non_admins_create_projects: z.boolean().default(true),
  allow_non_admins_manage_ssh_fleets: z.boolean().default(true),
});
export type DefaultPermissions = z.output<typeof DefaultPermissionsSchema>;

export const ServerConfigSchema = z.strictObject({
  projects: z
    .array(ProjectEntrySchema)
    .nullish()
    .transform((projects) => projects ?? []),
  encryption: z
    .strictObject({ keys: z.array(EncryptionKeySchema).default([]) })
    .nullish()
    .transform((encryption) => encryption ?? { keys: [] }),
  default_permissions: DefaultPermissionsSchema.nullish().transform(
    (permissions) => permissions ?? DefaultPermissionsSchema.parse({}),
  ),
  /** Where AWS and GCP offers come from (see `backends/server-catalog.ts`). */
  catalog: z
    .strictObject({
      /** Base URL of a catalog in gpuhunt's v3 layout; wins over `GPUHUNT_CATALOG_URL`. */
      url: z.url({ protocol: /^https?$/, error: 'catalog.url must be an http(s) URL' }).nullish(),
      /** Plan from the bundled snapshot only, never reading a catalog over the network. */
      offline: z.boolean().default(false),
    })
    .nullish()
    .transform((catalog) => ({ url: catalog?.url ?? null, offline: catalog?.offline ?? false })),
  /** How long events are kept (`events/event-retention.ts`). */
  events: z
    .strictObject({
      /** Seconds; 0 records no events. Wins over `DSTACK_SERVER_EVENTS_TTL_SECONDS`. */
      ttl_seconds: z.number().int().min(0).nullish(),
    })
    .nullish()
    .transform((events) => ({ ttl_seconds: events?.ttl_seconds ?? null })),
  /** dstack's plugin list; accepted for compatibility and ignored. */
  plugins: z.array(z.string()).nullish(),
});
export type ServerConfig = z.output<typeof ServerConfigSchema>;
/** config.yml as written (for `createTestApp` and tooling). */
export type ServerConfigInput = z.input<typeof ServerConfigSchema>;

export interface ServerConfigFile {
  /** Absolute path of config.yml. */
  path: string;
  /** The validated config; backend entries are their plugins' `backendConfigWithCreds` outputs. */
  config: ServerConfig;
  /** Whether the file was just written with the default content. */
  created: boolean;
  /** A ConfigurationError positioned at `path` in the file (e.g. a backend's creds that the provider rejected). */
  errorAt(path: ReadonlyArray<string | number>, message: string, cause?: unknown): ConfigurationError;
}

export type BackendPluginResolver = (type: string) => Promise<BackendPlugin>;

export interface LoadServerConfigOptions {
  /** The server directory (`DSTACK_SERVER_DIR`); config.yml is `{serverDir}/config.yml`. */
  serverDir: string;
  /** Finds each backend entry's plugin to validate it; without it, backend entries are checked only for `type`. */
  resolvePlugin?: BackendPluginResolver;
  /**
   * Backend types for the default file's `main` project; default `['local']`
   * when the local backend's package (`@dstack/backend-local`) loads, else none.
   */
  defaultBackendTypes?: readonly string[];
}

/**
 * The default config.yml: project `main` with `defaultBackendTypes`, and `encryptionKey`
 * (a new server encrypts creds and SSH keys from the start).
 */
export function renderDefaultServerConfig(
  defaultBackendTypes: readonly string[] = [],
  encryptionKey: { name: string; secret: string } = generateAesKey(),
): string {
  const backends =
    defaultBackendTypes.length === 0
      ? '    backends: []\n'
      : `    backends:\n${defaultBackendTypes.map((type) => `      - type: ${type}\n`).join('')}`;
  return [
    '# dstack server configuration: projects and their backends, kept in sync at start.',
    '# Backends: https://dstack.ai/docs/concepts/backends',
    'projects:',
    '  - name: main',
    backends,
    '# Backend creds and project SSH keys are encrypted at rest with the first key. Keep this',
    '# file safe, and give every server replica on one database the same keys. To rotate, put a',
    '# new key first (secret: `head -c 32 /dev/urandom | base64`) and keep this one after it.',
    'encryption:',
    '  keys:',
    '    - type: aes',
    `      name: ${encryptionKey.name}`,
    `      secret: ${encryptionKey.secret}`,
    '',
  ].join('\n');
}

async function detectDefaultBackendTypes(
  resolvePlugin: BackendPluginResolver | undefined,
): Promise<string[]> {
  const resolve = resolvePlugin ?? ((type: string) => loadBackendPlugin(type));
  return resolve(LOCAL_BACKEND_TYPE).then(
    () => [LOCAL_BACKEND_TYPE],
    () => [],
  );
}

/** Validates config.yml text (without backend plugin schemas). Throws ConfigurationError with line:column. */
export function parseServerConfig(
  text: string,
  file: string,
): { config: ServerConfig; parsed: ParsedYamlFile } {
  const parsed = parseYamlFile(text, file);
  const raw = parsed.data ?? {};
  const result = ServerConfigSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw zodIssuesToConfigurationError(parsed, result.error.issues, [], result.error);
  const config = result.data;
  const names = new Set<string>();
  for (const [index, project] of config.projects.entries()) {
    if (names.has(project.name)) {
      throw errorAtPath(parsed, ['projects', index, 'name'], `project "${project.name}" is listed twice`);
    }
    names.add(project.name);
    const types = new Set<string>();
    for (const [backendIndex, backend] of project.backends.entries()) {
      if (types.has(backend.type)) {
        throw errorAtPath(
          parsed,
          ['projects', index, 'backends', backendIndex, 'type'],
          `backend "${backend.type}" is listed twice in project "${project.name}"`,
        );
      }
      types.add(backend.type);
    }
  }
  for (const [index, key] of config.encryption.keys.entries()) {
    if (key.type !== 'aes') continue;
    try {
      decodeAesSecret(key.name, key.secret);
    } catch (error) {
      if (!EncryptionError.isInstance(error)) throw error;
      throw errorAtPath(parsed, ['encryption', 'keys', index, 'secret'], error.message, { cause: error });
    }
  }
  return { config, parsed };
}

/**
 * Reads `{serverDir}/config.yml` (writing the default when missing), validates
 * it, and validates each backend entry with its plugin's
 * `configSchemas.backendConfigWithCreds`. Errors are ConfigurationErrors with
 * the file, line, column and field path; print them with
 * `formatConfigurationError` from @dstack/core.
 */
export async function loadServerConfig(options: LoadServerConfigOptions): Promise<ServerConfigFile> {
  const path = join(options.serverDir, 'config.yml');
  let created = false;
  if (!existsSync(path)) {
    makeOwnerOnlyDirectory(options.serverDir);
    const defaultTypes =
      options.defaultBackendTypes ?? (await detectDefaultBackendTypes(options.resolvePlugin));
    await writeFile(path, renderDefaultServerConfig(defaultTypes), {
      flag: 'wx',
      mode: OWNER_ONLY_FILE_MODE,
    }).catch((error: NodeJS.ErrnoException) => {
      // Another server process wrote it first.
      if (error.code !== 'EEXIST') throw error;
    });
    created = true;
  }
  // It holds the encryption keys (and maybe creds); an older server wrote it readable by all.
  restrictToOwner(path);
  const text = await readFile(path, 'utf8');
  const { config, parsed } = parseServerConfig(text, path);
  if (options.resolvePlugin) {
    for (const [projectIndex, project] of config.projects.entries()) {
      for (const [backendIndex, entry] of project.backends.entries()) {
        const at = ['projects', projectIndex, 'backends', backendIndex] as const;
        let plugin: BackendPlugin;
        try {
          plugin = await options.resolvePlugin(entry.type);
        } catch (error) {
          throw errorAtPath(parsed, [...at, 'type'], (error as Error).message, { cause: error });
        }
        const result = plugin.configSchemas.backendConfigWithCreds.safeParse(entry, { reportInput: true });
        if (!result.success)
          throw zodIssuesToConfigurationError(parsed, result.error.issues, at, result.error);
        project.backends[backendIndex] = result.data as BackendEntry;
      }
    }
  }
  return {
    path,
    config,
    created,
    errorAt: (fieldPath, message, cause) => errorAtPath(parsed, fieldPath, message, { cause }),
  };
}
