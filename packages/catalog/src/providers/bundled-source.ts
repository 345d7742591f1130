import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogSource } from './catalog-source.js';
import { csvFileSource, fileVersion } from './directory-source.js';

/**
 * The snapshot shipped inside this package: `assets/snapshot/{provider}.csv` and
 * `assets/snapshot/version`. This file sits in `src/providers/` or `dist/providers/`,
 * both two levels below the package root.
 */
export const BUNDLED_SNAPSHOT_DIRECTORY: string = fileURLToPath(
  new URL('../../assets/snapshot/', import.meta.url),
);

/** The catalog snapshot bundled with `@dstack/catalog`; works offline. */
export function bundledSource(): CatalogSource {
  return snapshotSource(BUNDLED_SNAPSHOT_DIRECTORY, 'bundled snapshot');
}

/**
 * Catalog files in a directory that also holds a `version` file naming the version of all
 * of them (the layout of the bundled snapshot). Without a version file, a file's version is
 * its modification time and size.
 */
export function snapshotSource(directory: string, description = `snapshot ${directory}`): CatalogSource {
  return csvFileSource(
    directory,
    description,
    async (path) => (await readSnapshotVersion(directory)) ?? (await fileVersion(path)),
  );
}

async function readSnapshotVersion(directory: string): Promise<string | undefined> {
  try {
    const version = (await readFile(join(directory, 'version'), 'utf8')).trim();
    return version === '' ? undefined : version;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
