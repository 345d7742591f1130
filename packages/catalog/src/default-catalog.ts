import { Catalog } from './catalog.js';

/**
 * Kept on `globalThis` under a registered symbol, so that backend packages and the server share
 * it even when the package manager installed more than one copy of this package.
 */
const DEFAULT_CATALOG = Symbol.for('@dstack/catalog/default-catalog');

type GlobalWithCatalog = typeof globalThis & { [DEFAULT_CATALOG]?: Catalog };

/**
 * The process's catalog, which catalog backends (AWS, GCP) plan from unless given their own:
 * gpuhunt's `default_catalog()`. Until {@link setDefaultCatalog} is called it is a `Catalog` of
 * the bundled snapshot, so a library user or a test never reaches the network unasked; the
 * server sets one that reads gpuhunt's published catalogs.
 */
export function defaultCatalog(): Catalog {
  const holder = globalThis as GlobalWithCatalog;
  holder[DEFAULT_CATALOG] ??= new Catalog();
  return holder[DEFAULT_CATALOG];
}

/** Replaces the process's catalog (`undefined`: back to the bundled snapshot on next use). */
export function setDefaultCatalog(catalog: Catalog | undefined): void {
  const holder = globalThis as GlobalWithCatalog;
  if (catalog === undefined) delete holder[DEFAULT_CATALOG];
  else holder[DEFAULT_CATALOG] = catalog;
}
