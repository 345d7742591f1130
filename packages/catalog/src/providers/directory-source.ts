import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CatalogSource, CatalogSourceFile, CatalogSourceLoadOptions } from './catalog-source.js';

/**
 * Catalog files in a local directory, `{directory}/{provider}.csv`, as gpuhunt's
 * `GPUHUNT_CATALOG_DIR`. A file's version is its modification time and size, checked on
 * every query, so an edited file is picked up at once; a missing file fails that provider.
 */
export function directorySource(directory: string): CatalogSource {
  return { ...csvFileSource(directory, `directory ${directory}`, fileVersion), revalidateOnQuery: true };
}

/**
 * `{directory}/{provider}.csv` files whose version comes from `versionOf(path)`; a file is
 * read only when its version differs from the one in memory.
 */
export function csvFileSource(
  directory: string,
  description: string,
  versionOf: (path: string) => Promise<string>,
): CatalogSource {
  return {
    description,
    listProviders: () => listCsvProviders(directory),
    async load(
      provider: string,
      options: CatalogSourceLoadOptions = {},
    ): Promise<CatalogSourceFile | undefined> {
      const path = join(directory, `${provider}.csv`);
      const version = await versionOf(path);
      if (version === options.knownVersion) return undefined;
      return { version, text: await readCatalogText(path), location: path };
    },
  };
}

/** Provider names of the `*.csv` files in a directory, sorted; [] when it does not exist. */
export async function listCsvProviders(directory: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((name) => name.endsWith('.csv'))
    .map((name) => name.slice(0, -'.csv'.length))
    .sort();
}

export async function fileVersion(path: string): Promise<string> {
  const stats = await stat(path);
  return `mtime-${stats.mtimeMs}-size-${stats.size}`;
}

export async function readCatalogText(path: string): Promise<string> {
  return readFile(path, 'utf8');
}
