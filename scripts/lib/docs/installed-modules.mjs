/**
 * The built modules the docs are generated from: core (capabilities,
 * defaults), the catalog's map of backend packages, the server's config.yml schema, and every backend package in
 * `packages/backend-*` (new ones are picked up without a change here).
 * Everything is imported from `dist/`, so run a build first (`pnpm run docs` does).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { listWorkspacePackages } from '../workspace-packages.mjs';

const BACKEND_PLUGIN_TYPE = '@dstack/BackendPlugin';

/** Imports a built file of the workspace, or says which package to build. */
async function importBuilt(root, relativeFile, packageName) {
  const file = join(root, relativeFile);
  if (!existsSync(file))
    throw new Error(`${relativeFile} is missing: build ${packageName} first (pnpm build)`);
  return import(pathToFileURL(file).href);
}

/** `@dstack/core`'s capability list and default provisioning timeout. */
export async function loadCore(root) {
  const core = await importBuilt(root, 'packages/core/dist/index.js', '@dstack/core');
  return {
    capabilities: [...core.CAPABILITIES],
    defaultProvisioningTimeoutSeconds: core.DEFAULT_PROVISIONING_TIMEOUT_SECONDS,
  };
}

/** The one map of backend packages, `KNOWN_BACKENDS` of `@dstack/catalog`. */
export async function loadKnownBackends(root) {
  const module = await importBuilt(root, 'packages/catalog/dist/index.js', '@dstack/catalog');
  if (!Array.isArray(module.KNOWN_BACKENDS)) {
    throw new Error('packages/catalog/dist/index.js no longer exports KNOWN_BACKENDS');
  }
  return module.KNOWN_BACKENDS;
}

/** The server's config.yml schema (zod), `ServerConfigSchema`. */
export async function loadServerConfigSchema(root) {
  const module = await importBuilt(root, 'packages/server/dist/config/server-config.js', '@dstack/server');
  if (!module.ServerConfigSchema) {
    throw new Error('packages/server/dist/config/server-config.js no longer exports ServerConfigSchema');
  }
  return module.ServerConfigSchema;
}

/**
 * @typedef {object} InstalledBackend
 * @property {string} packageName e.g. `@dstack/backend-local`
 * @property {string} relativeDir e.g. `packages/backend-local`
 * @property {any} plugin the package's default export, a backend plugin descriptor
 */

/**
 * Every `packages/backend-*` package's plugin descriptor, sorted by type.
 * @returns {Promise<InstalledBackend[]>}
 */
export async function loadInstalledBackends(root) {
  const backendPackages = listWorkspacePackages(root).filter((pkg) =>
    pkg.relativeDir.startsWith('packages/backend-'),
  );
  const backends = [];
  for (const { relativeDir, manifest } of backendPackages) {
    const entry = manifest.exports?.['.']?.import ?? manifest.main ?? './dist/index.js';
    const module = await importBuilt(root, join(relativeDir, entry), manifest.name);
    const plugin = module.default;
    if (plugin?.$$type !== BACKEND_PLUGIN_TYPE) {
      throw new Error(
        `${manifest.name}'s default export is not a backend plugin descriptor ($$type "${BACKEND_PLUGIN_TYPE}")`,
      );
    }
    backends.push({ packageName: manifest.name, relativeDir, plugin });
  }
  return backends.sort((a, b) => a.plugin.type.localeCompare(b.plugin.type));
}
