import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  type PortableRuntime,
  type PreparePortableRuntimeOptions,
  preparePortableRuntime,
} from '@dstack/runner';

/** `$XDG_CACHE_HOME/dstack/runner-runtime`, else `~/.cache/dstack/runner-runtime`. */
export function defaultRuntimeCacheDirectory(): string {
  const cacheHome = process.env.XDG_CACHE_HOME;
  return join(
    cacheHome !== undefined && cacheHome !== '' ? cacheHome : join(homedir(), '.cache'),
    'dstack',
    'runner-runtime',
  );
}

/**
 * The shim's portable runtime, prepared at the first task and kept for the shim's life (a cached
 * one is found on disk at once). A failure is not kept: the next task tries again.
 */
export function onePortableRuntime(options: PreparePortableRuntimeOptions): () => Promise<PortableRuntime> {
  let prepared: Promise<PortableRuntime> | undefined;
  return () => {
    if (prepared === undefined) {
      prepared = preparePortableRuntime(options);
      prepared.catch(() => {
        prepared = undefined;
      });
    }
    return prepared;
  };
}
