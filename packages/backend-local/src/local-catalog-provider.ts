import { type CatalogItem, matches, type OnlineCatalogProvider, type QueryFilter } from '@dstack/catalog';
import { detectHostResources, type HostResources } from './host-resources.js';
import { resolveInstancesDir } from './local-config.js';
import { hostCatalogItem, LOCAL_BACKEND_TYPE } from './local-offers.js';

/** Settings of `LocalCatalogProvider`. */
export interface LocalCatalogProviderSettings {
  /**
   * The directory whose file system gives the disk size.
   * Default `$DSTACK_SERVER_DIR/local-instances`, else `~/.dstack/server/local-instances`.
   */
  instancesDir?: string;
  /** The host's resources; default detected once, on the first query. For tests. */
  hostResources?: HostResources;
}

/**
 * The local backend's catalog: the host itself, as one row priced 0. An online
 * provider because the row is the machine the server runs on, read when asked,
 * not a file collected ahead of time.
 */
export class LocalCatalogProvider implements OnlineCatalogProvider {
  readonly kind = 'online';
  readonly name = LOCAL_BACKEND_TYPE;
  readonly #instancesDir: string | undefined;
  #hostResources: Promise<HostResources> | undefined;

  constructor(settings: LocalCatalogProviderSettings = {}) {
    this.#instancesDir = settings.instancesDir;
    if (settings.hostResources) this.#hostResources = Promise.resolve(settings.hostResources);
  }

  /** The host's row when it matches the filter, else nothing. */
  async query(filter: QueryFilter): Promise<CatalogItem[]> {
    // Detected lazily: importing the package (and its descriptor) must not run nvidia-smi.
    this.#hostResources ??= detectHostResources({ instancesDir: resolveInstancesDir(this.#instancesDir) });
    const item = hostCatalogItem(await this.#hostResources);
    return matches(item, filter) ? [item] : [];
  }
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const localCatalogProvider = new LocalCatalogProvider();
