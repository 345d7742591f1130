/**
 * Loads the provider a task configuration names: a file path relative to the configuration's
 * directory, or a package installed where the configuration is (its `node_modules` or a
 * parent's). The module's default export must be a `defineProvider` descriptor.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  assertProvider,
  type Provider,
  ProviderError,
  type ProviderParametersSource,
  providerFieldError,
} from '@dstack/core';
import { importModule } from '../import-module.js';
import { PackageResolutionError, resolvePackageImport } from './resolve-package-import.js';

/** `./x.mjs`, `../x.mjs`, `/abs/x.mjs` and `file:` URLs name files; anything else a package. */
export function isFileSpecifier(specifier: string): boolean {
  return (
    specifier.startsWith('./') ||
    specifier.startsWith('../') ||
    specifier === '.' ||
    specifier === '..' ||
    specifier.startsWith('file:') ||
    isAbsolute(specifier)
  );
}

/**
 * The absolute path of the provider module. Throws `ConfigurationError` at the `provider`
 * field when the file does not exist or the package is not installed.
 */
export function resolveProviderModule(
  specifier: string,
  configurationPath: string,
  source?: ProviderParametersSource,
): string {
  const directory = dirname(resolve(configurationPath));
  if (isFileSpecifier(specifier)) {
    const file = specifier.startsWith('file:') ? fileURLToPath(specifier) : resolve(directory, specifier);
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw providerFieldError(
        `cannot find the provider module ${file} ('${specifier}' is relative to the configuration's directory)`,
        source,
      );
    }
    return file;
  }
  try {
    return resolvePackageImport(specifier, directory);
  } catch (error) {
    if (!(error instanceof PackageResolutionError)) throw error;
    throw providerFieldError(
      `${error.message}; install the provider package next to the configuration (npm install ${specifier})`,
      source,
      error,
    );
  }
}

/** Node's message for a module that cannot be loaded, with a hint for a missing dependency. */
function describeLoadError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if ((error as NodeJS.ErrnoException | undefined)?.code === 'ERR_MODULE_NOT_FOUND') {
    return `${message}; install the provider's dependencies where Node finds them from the provider's file (e.g. npm install @dstack/core zod)`;
  }
  return message;
}

/**
 * Resolves, imports and checks the provider `specifier` of the configuration at
 * `configurationPath`. Throws `ConfigurationError` (at `provider`) when the module cannot be
 * found, and `ProviderError` when it cannot be loaded or is not a provider.
 */
export async function loadProvider(
  specifier: string,
  configurationPath: string,
  source?: ProviderParametersSource,
): Promise<Provider> {
  const file = resolveProviderModule(specifier, configurationPath, source);
  let module: unknown;
  try {
    module = await importModule(pathToFileURL(file).href);
  } catch (error) {
    throw new ProviderError(
      `cannot load the provider '${specifier}' (${file}): ${describeLoadError(error)}`,
      {
        specifier,
        cause: error,
      },
    );
  }
  return assertProvider(module, specifier);
}
