/**
 * Which npm package implements which backend type, and loading them on demand.
 * Backends are optional peer dependencies: only configured ones are imported,
 * and a missing package is reported with the command that installs it.
 */
import { BACKEND_PACKAGES } from '@dstack/catalog';
import { assertBackendPlugin, type BackendPlugin, ConfigurationError } from '@dstack/core';

/**
 * Backend type → package: the one map of `@dstack/catalog`'s KNOWN_BACKENDS, which the
 * catalog's `collect` and the docs share and `pnpm plop backend` keeps. Third-party backends
 * can be registered in memory (BackendRegistry.registerPlugin).
 */
export { BACKEND_PACKAGES };

/** Imports a module by name; tests inject one to simulate installed or missing packages. */
export type ModuleImporter = (packageName: string) => Promise<unknown>;

const defaultImporter: ModuleImporter = (packageName) => import(packageName);

/** Whether `error` says that `packageName` itself is not installed (not one of its own dependencies). */
export function isPackageNotFound(error: unknown, packageName: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return false;
  const notFound =
    code === 'ERR_MODULE_NOT_FOUND' ||
    code === 'MODULE_NOT_FOUND' ||
    /Cannot find (package|module)|Failed to (load|resolve)/.test(message);
  if (!notFound) return false;
  // The package named on its own (quoted or space-delimited): not a longer name, not a dependency of it.
  const escaped = packageName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`(^|['"\\s])${escaped}(['"\\s]|$)`).test(message);
}

/**
 * Imports the plugin of backend `type` and checks it with `assertBackendPlugin`.
 * Throws ConfigurationError for an unknown type (listing the known ones) or a
 * package that is not installed (with the install command); BackendPluginError
 * when the package exports no valid plugin.
 */
export async function loadBackendPlugin(
  type: string,
  importer: ModuleImporter = defaultImporter,
): Promise<BackendPlugin> {
  const packageName = BACKEND_PACKAGES[type];
  if (!packageName) {
    throw new ConfigurationError(
      `Unknown backend type "${type}"; known types: ${Object.keys(BACKEND_PACKAGES).join(', ')}`,
    );
  }
  let module: unknown;
  try {
    module = await importer(packageName);
  } catch (error) {
    if (isPackageNotFound(error, packageName)) {
      throw new ConfigurationError(
        `Backend "${type}" is configured but its package is not installed: run "pnpm add ${packageName}" (or npm install ${packageName})`,
        { cause: error },
      );
    }
    throw error;
  }
  const plugin = assertBackendPlugin(module, packageName);
  if (plugin.type !== type) {
    throw new ConfigurationError(
      `Package "${packageName}" provides backend "${plugin.type}", expected "${type}"`,
    );
  }
  return plugin;
}

/** The backend types whose packages are installed and export a valid plugin. */
export async function listAvailableBackendTypes(
  importer: ModuleImporter = defaultImporter,
): Promise<string[]> {
  const types = Object.keys(BACKEND_PACKAGES);
  const loaded = await Promise.all(
    types.map((type) =>
      loadBackendPlugin(type, importer).then(
        () => true,
        () => false,
      ),
    ),
  );
  return types.filter((_, index) => loaded[index]);
}
