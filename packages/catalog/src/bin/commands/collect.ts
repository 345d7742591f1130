import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { KNOWN_BACKENDS, OFFLINE_CATALOG_PACKAGES } from '../../backends/known-backends.js';
import type { CollectOptions, OfflineCatalogProvider } from '../../providers/catalog-provider.js';
import { CliError, usageError } from '../cli-error.js';

function isOfflineProvider(value: unknown): value is OfflineCatalogProvider {
  const candidate = value as Partial<OfflineCatalogProvider> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    candidate.kind === 'offline' &&
    typeof candidate.name === 'string' &&
    typeof candidate.collect === 'function'
  );
}

/** A `--module` value that names a file rather than a package. */
function isPathSpecifier(specifier: string): boolean {
  return specifier.startsWith('.') || path.isAbsolute(specifier) || specifier.startsWith('file:');
}

/**
 * The entry file of package `name` as installed for `directory` (its own or an ancestor's
 * node_modules), or null when it is not installed there. The catalog does not depend on the
 * backend packages, so a backend the user installed in their project is found from where the
 * command runs, the way a linter finds its plugins.
 */
export function resolveInstalledPackage(name: string, directory: string): string | null {
  // Node's lookup directories, searched by hand: `exports` may not expose package.json.
  const lookup = createRequire(path.join(directory, 'package.json')).resolve.paths(name) ?? [];
  const manifestPath = lookup
    .map((dir) => path.join(dir, name, 'package.json'))
    .find((file) => existsSync(file));
  if (manifestPath === undefined) return null;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    exports?: string | Record<string, string | Record<string, string>>;
    main?: string;
  };
  const root = typeof manifest.exports === 'object' ? manifest.exports['.'] : manifest.exports;
  const entry = typeof root === 'object' ? (root.import ?? root.default) : (root ?? manifest.main);
  return entry ? path.resolve(path.dirname(manifestPath), entry) : null;
}

/**
 * Imports a backend module and returns its offline catalog provider: the default
 * export's `catalogProvider` (the backend descriptor) or a named `catalogProvider`.
 */
export async function loadOfflineProvider(
  provider: string,
  moduleSpecifier?: string,
): Promise<OfflineCatalogProvider> {
  const specifier = moduleSpecifier ?? OFFLINE_CATALOG_PACKAGES[provider];
  if (!specifier) {
    const online = KNOWN_BACKENDS.find(({ type, catalog }) => type === provider && catalog === 'online');
    if (online) {
      throw usageError(
        `provider "${provider}" is online: ${online.packageName} asks its offers live, there is nothing to collect`,
      );
    }
    throw usageError(
      `unknown provider "${provider}"; known: ${Object.keys(OFFLINE_CATALOG_PACKAGES).join(', ')} (or pass --module SPECIFIER)`,
    );
  }
  const candidate = await importCatalogProvider(specifier, `to collect ${provider}`);
  if (isOfflineProvider(candidate)) return candidate;
  const what =
    (candidate as { kind?: unknown } | undefined)?.kind === 'online'
      ? 'an online catalog provider, which has nothing to collect'
      : 'no offline catalog provider (default export with catalogProvider, or a named catalogProvider export)';
  throw new CliError(`${specifier} has ${what}`, 1);
}

/**
 * Imports a backend module (a package installed where the command runs, or a file) and returns
 * what it offers as its catalog provider: the default export's `catalogProvider` (the backend
 * descriptor) or a named `catalogProvider`. `purpose` ends the install hint ("to collect aws").
 */
export async function importCatalogProvider(specifier: string, purpose: string): Promise<unknown> {
  const installed = isPathSpecifier(specifier) ? null : resolveInstalledPackage(specifier, process.cwd());
  const importTarget = installed
    ? pathToFileURL(installed).href
    : isPathSpecifier(specifier) && !specifier.startsWith('file:')
      ? pathToFileURL(path.resolve(specifier)).href
      : specifier;
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(importTarget)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Only a missing backend itself is an install hint; a missing dependency inside it is a real failure.
    const backendMissing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      (error as Error).message.includes(isPathSpecifier(specifier) ? path.basename(specifier) : specifier);
    if (backendMissing) {
      throw new CliError(
        isPathSpecifier(specifier) ? `module ${specifier} not found` : `install ${specifier} ${purpose}`,
        1,
        { cause: error },
      );
    }
    throw new CliError(`cannot load ${specifier}: ${(error as Error).message}`, 1, { cause: error });
  }
  const descriptor = loaded.default as { catalogProvider?: unknown } | undefined;
  return descriptor?.catalogProvider ?? loaded.catalogProvider;
}

/** Collects one provider's offers and writes them as a gpuhunt-format catalog CSV. */
export async function collectToFile(
  provider: string,
  output: string,
  options: { module?: string } & CollectOptions = {},
): Promise<number> {
  const { module: moduleSpecifier, ...collectOptions } = options;
  const catalogProvider = await loadOfflineProvider(provider, moduleSpecifier);
  const items = await catalogProvider.collect(collectOptions);
  // The CSV writer loads here, not for every command of dstack-catalog.
  const { formatCatalogCsv } = await import('../../csv/catalog-csv.js');
  await writeFile(output, formatCatalogCsv(items));
  return items.length;
}

export function registerCollectCommand(program: Command): void {
  program
    .command('collect')
    .description("collect an offline provider's offers into a gpuhunt-format catalog CSV")
    .argument('<provider>', `provider name (${Object.keys(OFFLINE_CATALOG_PACKAGES).join(', ')})`)
    .requiredOption('-o, --output <file>', 'CSV file to write')
    .option(
      '--module <specifier>',
      'backend module to load instead of the default package (a package name or a file path)',
    )
    .option('--no-filter', "keep the rows the provider's filter would not publish (gpuhunt's --no-filter)")
    .addHelpText(
      'after',
      '\nThe provider comes from its backend package (for aws: @dstack/backend-aws), installed where the\ncommand runs (or beside dstack-catalog); its default export carries `catalogProvider`. Example:\n  dstack-catalog collect aws --output aws.csv\n',
    )
    .action(async (provider: string, options: { output: string; module?: string; filter: boolean }) => {
      const count = await collectToFile(provider, options.output, {
        module: options.module,
        applyFilter: options.filter,
        onProgress: (message) => process.stderr.write(`${message}\n`),
      });
      process.stderr.write(`wrote ${count} offers to ${options.output}\n`);
    });
}
