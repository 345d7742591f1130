import { KNOWN_BACKENDS } from '../../backends/known-backends.js';
import type { OnlineCatalogProvider } from '../../providers/catalog-provider.js';
import { CliError } from '../cli-error.js';
import { importCatalogProvider } from './collect.js';

/** Backends whose offers are asked live (Vast.ai); `local` is the server's own host, not a market. */
export const QUERYABLE_ONLINE_BACKENDS = KNOWN_BACKENDS.filter(
  ({ type, catalog }) => catalog === 'online' && type !== 'local',
);

function isOnlineProvider(value: unknown): value is OnlineCatalogProvider {
  const candidate = value as Partial<OnlineCatalogProvider> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    candidate.kind === 'online' &&
    typeof candidate.name === 'string' &&
    typeof candidate.query === 'function'
  );
}

/**
 * The online catalog provider of backend `name` (`vastai`), from its package installed where the
 * command runs; undefined when `name` is no online backend. Throws a `CliError` naming the
 * package to install.
 */
export async function loadOnlineProvider(name: string): Promise<OnlineCatalogProvider | undefined> {
  const backend = QUERYABLE_ONLINE_BACKENDS.find(({ type }) => type === name);
  if (!backend) return undefined;
  const candidate = await importCatalogProvider(backend.packageName, `to query ${name}`);
  if (!isOnlineProvider(candidate)) {
    throw new CliError(`${backend.packageName} has no online catalog provider`, 1);
  }
  return candidate;
}
