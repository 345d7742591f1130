import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  type PortableRuntime,
  type PreparePortableRuntimeOptions,
  preparePortableRuntime,
  readPortableRuntime,
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
 * one is found on disk at once). A failure is not kept: the next task tries again. With
 * `existingDirectory` (a shim started from the agent runtime, whose node runs through its loader
 * and so cannot be copied from `process.execPath`), that complete runtime is used as it is.
 */
export function onePortableRuntime(
  options: PreparePortableRuntimeOptions & { existingDirectory?: string },
): () => Promise<PortableRuntime> {
  let prepared: Promise<PortableRuntime> | undefined;
  return () => {
    if (prepared === undefined) {
      prepared =
        options.existingDirectory !== undefined
          ? readPortableRuntime(options.existingDirectory)
          : preparePortableRuntime(options);
      prepared.catch(() => {
        prepared = undefined;
      });
    }
    return prepared;
  };
}
