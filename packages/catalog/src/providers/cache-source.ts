import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CatalogSource, CatalogSourceFile, CatalogSourceLoadOptions } from './catalog-source.js';
import { csvFileSource } from './directory-source.js';

/**
 * `source`, with every catalog it loads also written to `{directory}/{provider}.csv` and its
 * version to `{directory}/{provider}.version`, so that {@link cacheDirectorySource} can serve it
 * after a restart without the network. A cache that cannot be written is not a load failure: the
 * data is in memory all the same, and the next load writes it again.
 */
export function cachingSource(
  source: CatalogSource,
  directory: string,
  onCacheError: (error: Error) => void = () => {},
): CatalogSource {
  return {
    ...source,
    async load(provider: string, options?: CatalogSourceLoadOptions): Promise<CatalogSourceFile | undefined> {
      const file = await source.load(provider, options);
      if (file) await writeCache(directory, provider, file).catch(onCacheError);
      return file;
    },
  };
}

/** The catalogs {@link cachingSource} wrote to `directory`, each with the version it had. */
export function cacheDirectorySource(directory: string): CatalogSource {
  return csvFileSource(directory, `catalog cache ${directory}`, async (csvPath) =>
    (await readFile(`${csvPath.slice(0, -'.csv'.length)}.version`, 'utf8')).trim(),
  );
}

async function writeCache(directory: string, provider: string, file: CatalogSourceFile): Promise<void> {
  await mkdir(directory, { recursive: true });
  // The CSV first, the version last: a version file names a CSV that is complete. Each file is
  // renamed into place, so a reader never sees half of one.
  await writeAtomically(join(directory, `${provider}.csv`), file.text);
  await writeAtomically(join(directory, `${provider}.version`), `${file.version}\n`);
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text, 'utf8');
  await rename(temporary, path);
}

/**
 * Each provider from the first of `sources` that has it: the fallback chain of a catalog read
 * from the network (its disk cache, then the bundled snapshot).
 */
export function firstAvailableSource(sources: readonly CatalogSource[]): CatalogSource {
  return {
    description: sources.map((source) => source.description).join(', else '),
    async listProviders() {
      const lists = await Promise.all(sources.map((source) => source.listProviders().catch(() => [])));
      return [...new Set(lists.flat())].sort();
    },
    async load(provider: string, options?: CatalogSourceLoadOptions) {
      let lastError: unknown = new Error(`no catalog of '${provider}' in ${sources.length} sources`);
      for (const source of sources) {
        try {
          return await source.load(provider, options);
        } catch (error) {
          lastError = error;
        }
      }
      throw lastError;
    },
  };
}
