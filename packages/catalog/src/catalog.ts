import type { CatalogItem } from './catalog-item.js';
import { type CatalogWarning, logCatalogWarning } from './csv/catalog-row-decoder.js';
import { CatalogError, describeError } from './errors.js';
import { matches, normalizeQueryFilter, type QueryFilterInput } from './matching/matches.js';
import { bundledSource } from './providers/bundled-source.js';
import type { OnlineCatalogProvider } from './providers/catalog-provider.js';
import type { CatalogSource } from './providers/catalog-source.js';
import { CatalogSelection, type OrderedOffers, orderedOffersOf } from './selection.js';
import { ColumnarCatalog } from './store/columnar-catalog.js';

export { BUNDLED_SNAPSHOT_DIRECTORY, bundledSource, snapshotSource } from './providers/bundled-source.js';
export { cacheDirectorySource, cachingSource, firstAvailableSource } from './providers/cache-source.js';
export type {
  CatalogProvider,
  CollectOptions,
  OfflineCatalogProvider,
  OnlineCatalogProvider,
} from './providers/catalog-provider.js';
export type {
  CatalogSource,
  CatalogSourceFile,
  CatalogSourceLoadOptions,
} from './providers/catalog-source.js';
export { directorySource } from './providers/directory-source.js';
export {
  GPUHUNT_CATALOG_URL,
  GPUHUNT_OFFLINE_PROVIDERS,
  type UrlSourceOptions,
  urlSource,
} from './providers/url-source.js';

export { CatalogSelection, mergeByPrice, type OrderedOffers, orderedOffersOf } from './selection.js';

/** gpuhunt's `RELOAD_INTERVAL`. */
export const DEFAULT_REFRESH_INTERVAL_MS = 15 * 60 * 1000;

export interface CatalogOptions {
  /** Where offline providers' catalogs come from. Default: {@link bundledSource}. */
  source?: CatalogSource;
  /**
   * Local data (a disk cache, the bundled snapshot) to answer from while `source` (the network)
   * has not: the first query loads it, which is fast, and `source` is then loaded in the
   * background, as is every refresh, so a query never waits for `source`. A provider `source`
   * fails for keeps what it has, and the failure is reported once until it loads again.
   * Default: none (queries wait for `source`).
   */
  fallback?: CatalogSource;
  /** Offline providers to load. Default: every provider the source has. */
  providers?: readonly string[];
  /**
   * Reload offline catalogs when a query comes this long after the last load. 0 disables
   * refreshing: data is loaded once, on the first query or {@link Catalog.load}.
   * Default: 15 minutes, as gpuhunt.
   */
  refreshIntervalMs?: number;
  /** Malformed rows, which are skipped. Default: `console.warn`. */
  onWarning?: (warning: CatalogWarning) => void;
  /**
   * Failures that do not fail the call: a provider that could not be refreshed (its last
   * data is kept), an online provider that failed during a query (it is skipped).
   * Default: `console.warn`.
   */
  onError?: (error: CatalogError) => void;
  /**
   * When an offline provider's load failure is reported: `load` (as soon as a load fails) or
   * `query` (when a query asks for that provider, or at once for a provider a query has asked
   * for: a catalog holding providers nobody plans with, or that no source publishes yet, stays
   * quiet about them, and the plan that answered from the fallback while the refresh was still
   * going is followed by the refresh's failure).
   * Default: `load`.
   */
  reportFailures?: 'load' | 'query';
}

/** What {@link Catalog.providers} reports about one provider. */
export interface CatalogProviderStatus {
  name: string;
  kind: 'offline' | 'online';
  /** Version of the data in memory (offline providers). */
  version?: string;
  /** Number of offers in memory (offline providers). */
  rows?: number;
  /** When the data in memory was loaded (offline providers). */
  loadedAt?: Date;
  /** The last load failure, when the last attempt failed. */
  lastError?: string;
  /** Where the data in memory came from (a path or URL), and whether that is the fallback. */
  location?: string;
  fromFallback?: boolean;
}

interface OfflineState {
  catalog?: ColumnarCatalog;
  version?: string;
  loadedAt?: Date;
  lastError?: string;
  location?: string;
  fromFallback?: boolean;
  /** The current failure was reported; cleared when the provider loads again. */
  failureReported?: boolean;
  /** A failure waiting for a query of the provider (`reportFailures: 'query'`). */
  unreportedFailure?: CatalogError;
}

type LoadOutcome =
  | { provider: string; status: 'loaded'; version: string; location: string; catalog: ColumnarCatalog }
  | { provider: string; status: 'unchanged' }
  | { provider: string; status: 'failed'; error: CatalogError };

/**
 * Offers from many providers, queried like gpuhunt's `Catalog`: offline providers from
 * catalog files held in memory in columnar form (refreshed when stale), online providers
 * asked on each query; results are merged by price, each provider keeping its own order.
 */
export class Catalog {
  private readonly source: CatalogSource;
  private readonly fallback: CatalogSource | undefined;
  /** Loading the fallback data, once, before the first query is answered. */
  private fallbackLoad: Promise<void> | undefined;
  private readonly refreshIntervalMs: number;
  private readonly onWarning: (warning: CatalogWarning) => void;
  private readonly onError: (error: CatalogError) => void;
  private readonly reportFailuresOn: 'load' | 'query';
  /** The offline providers a query has asked for (`reportFailures: 'query'` reports theirs at once). */
  private readonly queriedProviders = new Set<string>();
  private readonly online = new Map<string, OnlineCatalogProvider>();
  private readonly offline = new Map<string, OfflineState>();
  private offlineNames: string[] | undefined;
  /** `performance.now()` of the last load attempt that did not throw. */
  private lastLoadAt: number | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(options: CatalogOptions = {}) {
    this.source = options.source ?? bundledSource();
    this.fallback = options.fallback;
    this.refreshIntervalMs = options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS;
    if (!(this.refreshIntervalMs >= 0)) {
      throw new Error(`Invalid refreshIntervalMs ${options.refreshIntervalMs}: expected a number >= 0`);
    }
    this.onWarning = options.onWarning ?? logCatalogWarning;
    this.onError = options.onError ?? ((error) => console.warn(`catalog: ${describeError(error)}`));
    this.reportFailuresOn = options.reportFailures ?? 'load';
    if (options.providers) this.offlineNames = dedupe(options.providers.map((name) => name.toLowerCase()));
  }

  /** Adds an online provider, asked on each query. Names are unique across all providers. */
  addProvider(provider: OnlineCatalogProvider): this {
    if (provider.kind !== 'online') {
      throw new Error(`Catalog.addProvider takes online providers; '${provider.name}' is ${provider.kind}`);
    }
    const name = provider.name.toLowerCase();
    if (this.online.has(name) || this.offlineNames?.includes(name)) {
      throw new Error(`Provider '${name}' is already in the catalog`);
    }
    this.online.set(name, provider);
    return this;
  }

  /**
   * Loads or refreshes every offline provider's catalog, skipping those whose version did
   * not change. A provider that fails keeps its last data and is reported to `onError`;
   * throws only when every provider failed and none has data, or, for a pinned source,
   * when any provider failed (then nothing is replaced).
   */
  load(): Promise<void> {
    // Concurrent callers share one load.
    this.inFlight ??= this.loadOnce(this.source).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /**
   * Offers matching the filter, from the requested providers (default: all), merged by
   * price. Reloads stale offline data first. Throws for an unknown provider or an
   * invalid filter; an online provider that fails is reported to `onError` and skipped.
   */
  async query(filter: QueryFilterInput = {}): Promise<CatalogItem[]> {
    return (await this.select(filter)).toArray();
  }

  /**
   * Like {@link query}, but the offers are built only as they are read: the way to ask for
   * the cheapest few of a large result (`(await catalog.select(filter)).take(50)`).
   */
  async select(filter: QueryFilterInput = {}): Promise<CatalogSelection> {
    const normalized = normalizeQueryFilter(filter);
    const onlineOnly = normalized.provider?.every((name) => this.online.has(name)) ?? false;
    if (!onlineOnly) await this.loadIfStale();
    const known = [...(this.offlineNames ?? []), ...this.online.keys()];
    let selected: string[];
    if (normalized.provider === undefined) {
      selected = known;
    } else {
      selected = dedupe(normalized.provider);
      for (const name of selected) {
        if (!known.includes(name)) {
          throw new Error(`Unknown provider '${name}'; known: ${known.join(', ') || '(none)'}`);
        }
      }
    }
    for (const name of selected) {
      this.queriedProviders.add(name);
      this.reportFailureOnQuery(name);
    }
    const lists = await Promise.all(
      selected.map(async (name): Promise<OrderedOffers> => {
        const onlineProvider = this.online.get(name);
        if (onlineProvider) return orderedOffersOf(await this.queryOnline(name, onlineProvider, normalized));
        return this.offline.get(name)?.catalog?.select(normalized) ?? orderedOffersOf([]);
      }),
    );
    return new CatalogSelection(lists);
  }

  /** Providers known to the catalog, offline ones first, with what is in memory. */
  providers(): CatalogProviderStatus[] {
    const statuses: CatalogProviderStatus[] = [];
    for (const name of this.offlineNames ?? []) {
      const state = this.offline.get(name) ?? {};
      statuses.push({
        name,
        kind: 'offline',
        ...(state.version !== undefined && { version: state.version }),
        ...(state.catalog !== undefined && { rows: state.catalog.size }),
        ...(state.loadedAt !== undefined && { loadedAt: state.loadedAt }),
        ...(state.lastError !== undefined && { lastError: state.lastError }),
        ...(state.location !== undefined && { location: state.location, fromFallback: !!state.fromFallback }),
      });
    }
    for (const name of this.online.keys()) statuses.push({ name, kind: 'online' });
    return statuses;
  }

  private async loadIfStale(): Promise<void> {
    if (!this.fallback) {
      if (this.isStale()) await this.load();
      return;
    }
    const fallback = this.fallback;
    this.fallbackLoad ??= this.resolveNames().then(async (names) => {
      const outcomes = await Promise.all(names.map((name) => this.loadProvider(fallback, name)));
      // A provider without fallback data is reported only if `source` fails for it too; one that
      // `source` already loaded (a `load()` that came first) keeps that.
      const loaded = outcomes.filter(
        (outcome) => outcome.status === 'loaded' && this.offline.get(outcome.provider)?.catalog === undefined,
      );
      this.apply(loaded, { fromFallback: true });
    });
    await this.fallbackLoad;
    if (this.isStale()) {
      this.load().catch((error: unknown) =>
        this.onError(CatalogError.isInstance(error) ? error : new CatalogError(describeError(error))),
      );
    }
  }

  private isStale(): boolean {
    if (this.lastLoadAt === undefined || this.source.revalidateOnQuery) return true;
    return this.refreshIntervalMs > 0 && performance.now() - this.lastLoadAt > this.refreshIntervalMs;
  }

  private async resolveNames(): Promise<string[]> {
    if (this.offlineNames === undefined) {
      try {
        this.offlineNames = dedupe((await this.source.listProviders()).map((name) => name.toLowerCase()));
      } catch (error) {
        throw new CatalogError(`Cannot list the providers of ${this.source.description}`, { cause: error });
      }
      for (const name of this.offlineNames) {
        if (this.online.has(name)) throw new Error(`Provider '${name}' is both online and offline`);
      }
    }
    return this.offlineNames;
  }

  private async loadOnce(source: CatalogSource): Promise<void> {
    const names = await this.resolveNames();
    const outcomes = await Promise.all(names.map((name) => this.loadProvider(source, name)));
    const failures = outcomes.filter((outcome) => outcome.status === 'failed');
    if (source.pinned && failures.length > 0) {
      // All or nothing: keep every provider's previous data, only note the failures.
      for (const failure of failures) {
        const state = this.offline.get(failure.provider);
        this.offline.set(failure.provider, { ...state, lastError: describeError(failure.error) });
      }
      throw new CatalogError(
        `Cannot load ${source.description}: ${failures.map((failure) => describeError(failure.error)).join('; ')}`,
        { cause: failures[0]?.error },
      );
    }
    const toReport = failures.filter((failure) => !this.offline.get(failure.provider)?.failureReported);
    this.apply(outcomes, { fromFallback: false });
    const hasData = names.some((name) => this.offline.get(name)?.catalog !== undefined);
    if (names.length > 0 && failures.length === names.length && !hasData) {
      throw new CatalogError(
        `Cannot load any provider from ${source.description}: ` +
          failures.map((failure) => describeError(failure.error)).join('; '),
        { cause: failures[0]?.error },
      );
    }
    for (const failure of toReport) this.reportFailure(failure.provider, failure.error);
    this.lastLoadAt = performance.now();
  }

  /** Records load outcomes: new data replaces the old, a failure keeps it. */
  private apply(outcomes: readonly LoadOutcome[], { fromFallback }: { fromFallback: boolean }): void {
    const now = new Date();
    for (const outcome of outcomes) {
      const state = this.offline.get(outcome.provider) ?? {};
      if (outcome.status === 'loaded') {
        this.offline.set(outcome.provider, {
          catalog: outcome.catalog,
          version: outcome.version,
          loadedAt: now,
          location: outcome.location,
          fromFallback,
        });
      } else if (outcome.status === 'unchanged') {
        // The data in memory is what the source has: it is no longer only the fallback's.
        const {
          lastError: _cleared,
          failureReported: _reported,
          unreportedFailure: _waiting,
          ...rest
        } = state;
        this.offline.set(outcome.provider, { ...rest, fromFallback: fromFallback && !!rest.fromFallback });
      } else {
        this.offline.set(outcome.provider, { ...state, lastError: describeError(outcome.error) });
      }
    }
  }

  /** Reports a provider's failure waiting for this query of it, if any. */
  private reportFailureOnQuery(provider: string): void {
    const error = this.offline.get(provider)?.unreportedFailure;
    if (error === undefined) return;
    this.reportFailure(provider, error, { now: true });
  }

  /** Reports a provider's failure once, saying what the catalog answers from meanwhile. */
  private reportFailure(provider: string, error: CatalogError, { now = false } = {}): void {
    const { unreportedFailure: _waiting, ...state } = this.offline.get(provider) ?? {};
    if (this.reportFailuresOn === 'query' && !now && !this.queriedProviders.has(provider)) {
      this.offline.set(provider, { ...state, failureReported: true, unreportedFailure: error });
      return;
    }
    this.offline.set(provider, { ...state, failureReported: true });
    if (!state.fromFallback || state.location === undefined) {
      this.onError(error);
      return;
    }
    this.onError(
      new CatalogError(
        `${describeError(error)}; answering from ${state.location} (version ${state.version}) until it loads`,
        { cause: error },
      ),
    );
  }

  private async loadProvider(source: CatalogSource, provider: string): Promise<LoadOutcome> {
    const knownVersion = this.offline.get(provider)?.version;
    try {
      const file = await source.load(provider, knownVersion === undefined ? {} : { knownVersion });
      if (file === undefined) return { provider, status: 'unchanged' };
      const catalog = ColumnarCatalog.fromCsv(provider, file.text, {
        source: file.location,
        onWarning: this.onWarning,
      });
      return { provider, status: 'loaded', version: file.version, location: file.location, catalog };
    } catch (error) {
      const wrapped = CatalogError.isInstance(error)
        ? error
        : new CatalogError(`Cannot load the '${provider}' catalog from ${source.description}`, {
            cause: error,
          });
      return { provider, status: 'failed', error: wrapped };
    }
  }

  private async queryOnline(
    name: string,
    provider: OnlineCatalogProvider,
    filter: ReturnType<typeof normalizeQueryFilter>,
  ): Promise<CatalogItem[]> {
    let items: CatalogItem[];
    try {
      items = await provider.query(filter);
    } catch (error) {
      this.onError(new CatalogError(`Online provider '${name}' failed; skipping it`, { cause: error }));
      return [];
    }
    const result: CatalogItem[] = [];
    for (const item of items) {
      const named = item.provider === name ? item : { ...item, provider: name };
      if (matches(named, filter)) result.push(named);
    }
    return result;
  }
}

function dedupe(names: readonly string[]): string[] {
  return [...new Set(names)];
}
