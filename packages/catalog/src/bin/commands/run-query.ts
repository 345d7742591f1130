/** `dstack-catalog query`: loads the catalog (and the online providers named) and prints the matching offers. */
import {
  bundledSource,
  Catalog,
  directorySource,
  type OnlineCatalogProvider,
  urlSource,
} from '../../catalog.js';
import { type CatalogWarning, logCatalogWarning } from '../../csv/catalog-csv.js';
import { describeError } from '../../errors.js';
import { usageError } from '../cli-error.js';
import { loadOnlineProvider } from './online-providers.js';
import { type QueryOptions, queryOptionsToFilter } from './query-options.js';
import { formatOffersTable, offerToJson, shouldUseColor } from './query-output.js';

export async function runQuery(options: QueryOptions): Promise<void> {
  const filter = queryOptionsToFilter(options);
  if (options.catalogDir && options.catalogUrl)
    throw usageError('use either --catalog-dir or --catalog-url, not both');
  // Online providers (a marketplace such as Vast.ai) are asked live, only when named.
  const onlineProviders: OnlineCatalogProvider[] = [];
  for (const name of filter.provider ?? []) {
    const online = await loadOnlineProvider(name);
    if (online) onlineProviders.push(online);
  }
  // Named offline providers are the only ones downloaded.
  const offlineNames = filter.provider?.filter((name) => !onlineProviders.some((p) => p.name === name));
  const source = options.catalogDir
    ? directorySource(options.catalogDir)
    : options.catalogUrl
      ? urlSource(options.catalogUrl, offlineNames?.length ? { providers: offlineNames } : {})
      : bundledSource();
  const catalog = new Catalog({
    source,
    refreshIntervalMs: 0,
    onWarning: (warning: CatalogWarning) => logCatalogWarning(warning),
    onError: (error) => process.stderr.write(`warning: ${describeError(error)}\n`),
  });
  for (const online of onlineProviders) catalog.addProvider(online);
  await catalog.load();
  const known = catalog.providers().map((provider) => provider.name);
  if (known.length === 0) throw usageError(`no catalog files ({provider}.csv) in ${source.description}`);
  const unknown = filter.provider?.filter((name) => !known.includes(name)) ?? [];
  if (unknown.length > 0) {
    throw usageError(`unknown provider ${unknown.join(', ')}; this catalog has ${known.join(', ')}`);
  }
  const selection = await catalog.select(filter);
  const items = options.limit === undefined ? selection.toArray() : selection.take(options.limit);
  if (options.format === 'json') {
    process.stdout.write(`${JSON.stringify(items.map(offerToJson), null, 2)}\n`);
  } else {
    process.stdout.write(formatOffersTable(items, { color: shouldUseColor(process.stdout) }));
  }
}
