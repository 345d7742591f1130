/** One provider's catalog file as read from a source. */
export interface CatalogSourceFile {
  /** Version of the data; the same version means the same content. */
  version: string;
  /** The CSV text. */
  text: string;
  /** Where it came from (path or URL), for warnings and errors. */
  location: string;
}

export interface CatalogSourceLoadOptions {
  /** The version already in memory: when it is still current, `load` returns undefined. */
  knownVersion?: string;
}

/** Where {@link Catalog} reads offline providers' catalog files from. */
export interface CatalogSource {
  /** Human-readable description (`bundled snapshot 20261121-1`, `directory /data`). */
  readonly description: string;
  /**
   * A pinned source serves one fixed version: a failure of any provider fails the whole
   * load, and nothing is replaced (gpuhunt's `load(version=...)`).
   */
  readonly pinned?: boolean;
  /**
   * Check for new data on every query instead of every refresh interval, because checking
   * is cheap (a file's modification time); gpuhunt reads `GPUHUNT_CATALOG_DIR` on every query.
   */
  readonly revalidateOnQuery?: boolean;
  /** The offline providers this source has a catalog for. */
  listProviders(): Promise<string[]>;
  /** Reads a provider's catalog, or returns undefined when `knownVersion` is still current. */
  load(provider: string, options?: CatalogSourceLoadOptions): Promise<CatalogSourceFile | undefined>;
}
