import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { zipSync } from 'fflate';

export interface PublishCatalogOptions {
  /** The root of the layout: what `GPUHUNT_CATALOG_URL` points at once served over HTTP. */
  readonly directory: string;
  /** The provider, gpuhunt's name (`aws`, `gcp`, `lambdalabs`…): the folder and the CSV member's name. */
  readonly provider: string;
  /** The catalog CSV (gpuhunt's format, e.g. `dstack-catalog collect`'s output). */
  readonly csv: string;
  /** The version to publish it as. Default: {@link catalogVersion} of the CSV. */
  readonly version?: string;
}

export interface PublishedCatalog {
  readonly version: string;
  /** `{directory}/{provider}/{version}/catalog.zip`. */
  readonly zipPath: string;
}

/**
 * Writes one provider's catalog in gpuhunt's v3 layout, as its CI publishes to its bucket:
 * `{provider}/{version}/catalog.zip` (member `{provider}.csv`), the same zip under
 * `{provider}/latest/`, and last `{provider}/version`, so a reader that sees the new version
 * finds its zip complete. Served by any static HTTP server, the directory is a catalog the
 * server reads (`catalog.url` in config.yml, or `GPUHUNT_CATALOG_URL`).
 */
export async function publishCatalog(options: PublishCatalogOptions): Promise<PublishedCatalog> {
  const { directory, provider, csv } = options;
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(provider)) {
    throw new Error(`Invalid provider name "${provider}": lowercase letters, digits, - and _`);
  }
  const version = options.version ?? catalogVersion(csv);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(version)) {
    throw new Error(`Invalid version "${version}": letters, digits, ., - and _`);
  }
  const zip = zipSync({ [`${provider}.csv`]: new TextEncoder().encode(csv) });
  const providerDirectory = join(directory, provider);
  const zipPath = join(providerDirectory, version, 'catalog.zip');
  for (const folder of [version, 'latest']) {
    await mkdir(join(providerDirectory, folder), { recursive: true });
    await writeAtomically(join(providerDirectory, folder, 'catalog.zip'), zip);
  }
  await writeAtomically(join(providerDirectory, 'version'), `${version}\n`);
  return { version, zipPath };
}

/**
 * gpuhunt's version shape, `YYYYMMDD-<tag>`: today's UTC date and the first 8 hex digits of the
 * CSV's SHA-256, so publishing the same data twice gives the same version.
 */
export function catalogVersion(csv: string, date: Date = new Date()): string {
  const day = date.toISOString().slice(0, 10).replaceAll('-', '');
  return `${day}-${createHash('sha256').update(csv).digest('hex').slice(0, 8)}`;
}

async function writeAtomically(path: string, content: string | Uint8Array): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, content);
  await rename(temporary, path);
}
