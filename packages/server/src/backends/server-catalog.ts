/**
 * The catalog AWS and GCP plan from, as dstack's `gpuhunt.default_catalog()`: gpuhunt's published
 * per-provider catalogs (its v3 layout under `catalog.url` of config.yml, else `GPUHUNT_CATALOG_URL`,
 * else gpuhunt's bucket), cached on disk and refreshed every 15 minutes in the background, with
 * the bundled snapshot when neither the network nor the cache has a provider.
 *
 * The download starts when the server starts. A plan waits for the network only the first time,
 * and only for a provider with no cached copy: then it waits for that first download up to
 * {@link FIRST_LOAD_WAIT_MS} before answering from the snapshot, so a server started with
 * `GPUHUNT_CATALOG_URL` answers its very first plan with that catalog's prices. A provider with a
 * cached copy answers from it at once, and every refresh runs beside the queries that asked for
 * it. A provider whose catalog fails keeps the one it has; each failure is logged once, when a plan
 * first asks for that provider.
 */
import { join } from 'node:path';
import {
  bundledSource,
  Catalog,
  type CatalogError,
  type CatalogSource,
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

/**
 * How long a plan waits for the server's first download of a provider it has no cached copy of,
 * before answering from the bundled snapshot: long enough for a catalog host that answers, short
 * enough that an unreachable one does not hold up plans.
 */
export const FIRST_LOAD_WAIT_MS = 5_000;

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
  // A provider's failure is said when a plan asks for it: an installed backend no project plans
  // with, or whose catalog is not published, says nothing.
  if (options.offline)
    return new Catalog({ source: bundledSource(), providers, onError, reportFailures: 'query' });
  const cacheDirectory = catalogCacheDirectory(options.serverDir);
  const published = urlSource(options.url ?? GPUHUNT_CATALOG_URL, {
    providers,
    timeoutMs: CATALOG_REQUEST_TIMEOUT_MS,
  });
  let firstLoad: Promise<void> = Promise.resolve();
  const catalog = new Catalog({
    source: cachingSource(published, cacheDirectory, (error) =>
      log(`catalog: cannot write the cache in ${cacheDirectory}: ${error.message}`),
    ),
    fallback: firstAvailableSource([
      cacheDirectorySource(cacheDirectory),
      afterFirstLoad(bundledSource(), () => firstLoad, FIRST_LOAD_WAIT_MS),
    ]),
    providers,
    onError,
    reportFailures: 'query',
  });
  // Started now rather than by the first plan. A failure of every provider is not said here: the
  // first plan finds it again and says it once per provider, naming what it answers from instead.
  firstLoad = catalog.load().catch(() => {});
  return catalog;
}

/**
 * `source`, whose reads first wait for `firstLoad` (at most `waitMs`): the fallback data is only
 * read once the download the server started has had its chance, and data that download brought
 * wins over it (the catalog keeps what its source loaded).
 */
function afterFirstLoad(
  source: CatalogSource,
  firstLoad: () => Promise<void>,
  waitMs: number,
): CatalogSource {
  return {
    description: source.description,
    listProviders: () => source.listProviders(),
    async load(provider, options) {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
        timer.unref();
      });
      await Promise.race([firstLoad(), waited]).finally(() => clearTimeout(timer));
      return source.load(provider, options);
    },
  };
}

function describeCatalogError(error: Error): string {
  return error.cause instanceof Error && !error.message.includes(error.cause.message)
    ? `${error.message}: ${error.cause.message}`
    : error.message;
}
