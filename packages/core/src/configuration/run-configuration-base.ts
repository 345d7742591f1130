/**
 * Fields every run configuration (task, service, dev-environment) shares, and the checks on them.
 */

import * as z from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { isValidUnixUser } from '../models/unix-user.js';
import { envSchema } from './env.js';
import { mountPointSchema } from './mount-point.js';
import { portMappingSchema } from './ports.js';
import { profileParamsShape } from './profile.js';
import { defaultResourcesSpec, resourcesSpecSchema } from './resources.js';
import { RUN_PRIORITY_MAX, RUN_PRIORITY_MIN } from './run-priority.js';
import { isPlainObject, strictObject } from './schema-helpers.js';

export const PYTHON_VERSIONS = ['3.9', '3.10', '3.11', '3.12', '3.13', '3.14'] as const;
export type PythonVersion = (typeof PYTHON_VERSIONS)[number];

/**
 * `python: 3.12` or `"3.12"`. YAML reads `3.10` as the number 3.1, so 3.1 means 3.10, as in
 * dstack.
 */
export const pythonVersionSchema = z.preprocess(
  (value) => (typeof value === 'number' ? (value === 3.1 ? '3.10' : String(value)) : value),
  z.enum(PYTHON_VERSIONS),
);

const registryAuthSchema = strictObject({
  /** Registry user name. */
  username: z.string(),
  /** Registry password or token. */
  password: z.string(),
});

const repoSpecObjectSchema = strictObject({
  /** Path to a Git repo on the user's machine; relative to the configuration file. */
  local_path: z.string().min(1).optional(),
  /** Git repo URL; mutually exclusive with `local_path`. */
  url: z.string().min(1).optional(),
  /** Branch. Default: the active branch (local) or the default branch (URL). */
  branch: z.string().min(1).optional(),
  /** Commit hash. */
  hash: z.string().min(1).optional(),
  /** Where to put the repo in the container. Default `.` (the working directory). */
  path: z.string().min(1).default('.'),
  /** What to do if `path` is not empty: `error` or `skip`. Default `error`. */
  if_exists: z.enum(['error', 'skip']).default('error'),
});
export type RepoSpec = z.infer<typeof repoSpecObjectSchema>;

/**
 * Parses the repo shorthand: `..`, `/local/path:/container/path`, a URL
 * (`https://github.com/org/repo`, `git@github.com:org/repo.git`) optionally followed by `:path`.
 */
export function parseRepoShorthand(text: string): Record<string, string> {
  let parts = text.split(':');
  let isUrl = false;
  if (parts.length > 1) {
    const [first = '', second = ''] = parts;
    if (first.includes('@') || second.startsWith('//')) {
      parts = [`${first}:${second}`, ...parts.slice(2)];
      isUrl = true;
    } else if (/^[a-z]$/i.test(first) && /^[\\/]/.test(second)) {
      // A Windows drive letter, not a separator.
      parts = [`${first}:${second}`, ...parts.slice(2)];
    }
  }
  if (parts.length > 2)
    throw new Error(`invalid repo '${text}': expected a path or URL, optionally followed by ':path'`);
  const [source = '', path] = parts;
  return { [isUrl ? 'url' : 'local_path']: source, ...(path === undefined ? {} : { path }) };
}

/** A Git repo to clone into the run: shorthand string or `{local_path|url, branch, hash, path, if_exists}`. */
export const repoSpecSchema = z
  .preprocess((value, ctx) => {
    if (typeof value !== 'string') return value;
    try {
      return parseRepoShorthand(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message, input: value });
      return z.NEVER;
    }
  }, repoSpecObjectSchema)
  .superRefine((repo, ctx) => {
    if (repo.local_path && repo.url) {
      ctx.addIssue({
        code: 'custom',
        message: "'local_path' and 'url' are mutually exclusive",
        path: ['url'],
      });
    } else if (!repo.local_path && !repo.url) {
      ctx.addIssue({ code: 'custom', message: "either 'local_path' or 'url' is required" });
    }
  });

const filePathMappingObjectSchema = strictObject({
  /** Local file or directory; relative to the configuration file. */
  local_path: z.string().min(1),
  /** Path in the container; relative to the working directory. Default: same as `local_path`. */
  path: z.string().min(1),
});

/** A file to copy into the run: `local` or `local:container`, or `{local_path, path}`. */
export const filePathMappingSchema = z.preprocess((value) => {
  if (isPlainObject(value) && typeof value.local_path === 'string' && value.path === undefined) {
    return { ...value, path: value.local_path };
  }
  if (typeof value !== 'string') return value;
  // Skip a Windows drive letter (`C:\data`) when looking for the separator.
  const start = /^[a-z]:[\\/]/i.test(value) ? 2 : 0;
  const separator = value.indexOf(':', start);
  if (separator === -1) return { local_path: value, path: value };
  return { local_path: value.slice(0, separator), path: value.slice(separator + 1) };
}, filePathMappingObjectSchema);

const shellSchema = z
  .string()
  .refine((shell) => shell === 'sh' || shell === 'bash' || shell.startsWith('/'), {
    error: "expected 'sh', 'bash' or an absolute path, e.g. /usr/bin/zsh",
  });

/** Shell commands. */
export const commandsSchema = z.array(z.string());

/** Fields of every run configuration, including every profile parameter. */
export const baseRunConfigurationShape = {
  /** Run name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** Docker image. Default: dstack's base image (CUDA, Python, uv). */
  image: z.string().min(1).optional(),
  /** User in the container, `user[:group]`. Default: the image's user. */
  user: z
    .string()
    .min(1)
    .refine((value) => isValidUnixUser(value), {
      error: 'expected `user`, `user:group`, `uid` or `uid:gid` (no empty part)',
    })
    .optional(),
  /** Run the container privileged. Default `false`. */
  privileged: z.boolean().default(false),
  /** Docker entrypoint. Default: the image's. */
  entrypoint: z.string().optional(),
  /** Absolute working directory in the container. Default: the image's. */
  working_dir: z.string().min(1).optional(),
  /** Deprecated and ignored by dstack. Default `/root`. */
  home_dir: z.string().default('/root'),
  /** Credentials for a private image. */
  registry_auth: registryAuthSchema.optional(),
  /** Python version of dstack's base image (3.9–3.14); excludes `image` and `docker`. */
  python: pythonVersionSchema.optional(),
  /** Use the base image with the CUDA compiler; excludes `image` and `docker`. */
  nvcc: z.boolean().optional(),
  /** Docker inside the run; excludes `image`, `python` and `nvcc`. */
  docker: z.boolean().optional(),
  /** Clone only the current branch. Default `true` for tasks and services, `false` for dev environments. */
  single_branch: z.boolean().optional(),
  /** Environment variables; `null` values come from the user's environment. Default `{}`. */
  env: envSchema.default(() => ({})),
  /** `sh`, `bash` or an absolute path. Default `/bin/sh` with `image`, else `/bin/bash`. */
  shell: shellSchema.optional(),
  /** Resources requirement. Default cpu `2..`, memory `8GB..`, gpu `0..`, disk `100GB..`. */
  resources: resourcesSpecSchema.default(defaultResourcesSpec),
  /** 0..100; higher is provisioned first. Default 0. */
  priority: z.int().min(RUN_PRIORITY_MIN).max(RUN_PRIORITY_MAX).optional(),
  /** Volumes to mount. Default `[]`. */
  volumes: z.array(mountPointSchema).default(() => []),
  /** Git repos to clone (at most one). Default `[]`. */
  repos: z
    .array(repoSpecSchema)
    .max(1, { error: 'at most one repo is supported' })
    .default(() => []),
  /** Files to copy into the run. Default `[]`. */
  files: z.array(filePathMappingSchema).default(() => []),
  /** Make the dstack server reachable from the run. Default `false`. */
  dstack: z.boolean().default(false),
  /** Deprecated: commands run before `init` in dev environments. Default `[]`. */
  setup: commandsSchema.default(() => []),
  ...profileParamsShape,
};

/** `ports` of tasks and dev environments. Default `[]`. */
export const portsShape = {
  /** Ports to forward: `8080`, `"80:8080"`, `"*:8080"`. Default `[]`. */
  ports: z.array(portMappingSchema).default(() => []),
};

interface ImageSources {
  image?: string | undefined;
  python?: string | undefined;
  nvcc?: boolean | undefined;
  docker?: boolean | undefined;
}

/** `image`, `python`, `nvcc` and `docker` choose the image in different ways; only some combine. */
export function checkImageSources(config: ImageSources, ctx: z.RefinementCtx, where = ''): void {
  const conflict = (first: string, second: string) =>
    ctx.addIssue({
      code: 'custom',
      message: `'${first}' and '${second}' are mutually exclusive${where}`,
      path: [second],
    });
  if (config.image !== undefined && config.python !== undefined) conflict('image', 'python');
  if (config.image !== undefined && config.nvcc === true) conflict('image', 'nvcc');
  if (config.docker === true) {
    if (config.image !== undefined) conflict('image', 'docker');
    if (config.python !== undefined) conflict('python', 'docker');
    if (config.nvcc === true) conflict('nvcc', 'docker');
  }
}

/** Node and replica group names: lowercase letters, digits and dashes. */
export const groupNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, { error: 'expected lowercase letters, digits and dashes (up to 40)' });
