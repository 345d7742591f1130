/**
 * The catalog AWS and GCP plan from, as dstack's `gpuhunt.default_catalog()`: gpuhunt's published
 * per-provider catalogs (its v3 layout under `catalog.url` of config.yml, else `GPUHUNT_CATALOG_URL`,
 * else gpuhunt's bucket), cached on disk and refreshed every 15 minutes in the background, with
 * the bundled snapshot when neither the network nor the cache has a provider.
 *
 * A plan never waits for the network: the first query loads the disk cache (else the snapshot),
 * which takes milliseconds, and starts the download; a refresh runs beside the queries that asked
 * for it. So only the first plans of a server that never reached the catalog use the snapshot,
 * and a provider whose catalog fails keeps the one it has; each failure is logged once.
 */
import { join } from 'node:path';
import {
  bundledSource,
  Catalog,
  type CatalogError,
  cacheDirectorySource,
  cachingSource,
  catalogProviderName,
  firstAvailableSource,
  GPUHUNT_CATALOG_URL,
  KNOWN_BACKENDS,
  urlSource,
} from '@dstack/catalog';

/** Each request to the catalog's host; it runs in the background, so this only bounds a stuck one. */
const CATALOG_REQUEST_TIMEOUT_MS = 60_000;

export interface ServerCatalogOptions {
  /** `catalog.url` of config.yml, else `GPUHUNT_CATALOG_URL`; null: gpuhunt's bucket. */
  url: string | null;
  /** `catalog.offline` of config.yml: the bundled snapshot only. */
  offline: boolean;
  /** The server directory; the cache is `{serverDir}/data/catalog`. */
  serverDir: string;
  /** Backend types whose packages are installed: their offline catalogs are the ones read. */
  installedBackendTypes: readonly string[];
  /** Where a failure is said; default `console.warn`. */
  log?: (message: string) => void;
}

/** The catalog's cache directory under the server directory. */
export function catalogCacheDirectory(serverDir: string): string {
  return join(serverDir, 'data', 'catalog');
}

export function createServerCatalog(options: ServerCatalogOptions): Catalog {
  const log = options.log ?? ((message: string) => console.warn(`[dstack-server] ${message}`));
  const onError = (error: CatalogError) => log(`catalog: ${describeCatalogError(error)}`);
  const providers = KNOWN_BACKENDS.filter(
    (backend) => backend.catalog === 'offline' && options.installedBackendTypes.includes(backend.type),
  ).map(catalogProviderName);
  if (options.offline) return new Catalog({ source: bundledSource(), providers, onError });
  const cacheDirectory = catalogCacheDirectory(options.serverDir);
  const published = urlSource(options.url ?? GPUHUNT_CATALOG_URL, {
    providers,
    timeoutMs: CATALOG_REQUEST_TIMEOUT_MS,
  });
  return new Catalog({
    source: cachingSource(published, cacheDirectory, (error) =>
      log(`catalog: cannot write the cache in ${cacheDirectory}: ${error.message}`),
    ),
    fallback: firstAvailableSource([cacheDirectorySource(cacheDirectory), bundledSource()]),
    providers,
    onError,
  });
}

function describeCatalogError(error: Error): string {
  return error.cause instanceof Error && !error.message.includes(error.cause.message)
    ? `${error.message}: ${error.cause.message}`
    : error.message;
}
