/**
 * Runs a bundle through V8's code cache, which Node 20 offers user code only through `vm.Script`
 * (`module.enableCompileCache()` needs Node 22): the bundle is one function expression (a
 * CommonJS module's wrapper, `SCRIPT_BUNDLE_PARAMETERS` of scripts/lib/node-bundle.mjs), compiled
 * with the cache of an earlier run when there is one. Without it V8 parses and compiles the
 * bundle's code on every start; with it, the functions an earlier run compiled are read back.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

/** A version's caches not written for this long are removed when another version writes its own. */
const STALE_CACHE_MS = 30 * 24 * 3600 * 1000;

export interface ScriptBundle<Exports> {
  /** What the bundle's module exported. */
  readonly exports: Exports;
  /** Whether V8 took the cache file (false: there was none, or it was made by another node or flags). */
  readonly cacheAccepted: boolean;
  /**
   * Writes the code cache when V8 did not take one: called after the command's work, it holds the
   * functions that work compiled, not only the bundle's top level. Never throws: a cache that
   * cannot be written (a read-only home) only leaves the next start uncached.
   */
  saveCache(): void;
}

export interface ScriptBundleOptions {
  /** The bundle file. */
  file: string;
  /** Its code cache, read and written; null: none. */
  cacheFile: string | null;
  /** The `import()` the bundle gets (code compiled by `vm.Script` has none on Node 20). */
  importModule: (specifier: string) => Promise<unknown>;
}

function readCache(cacheFile: string | null): Buffer | undefined {
  if (cacheFile === null) return undefined;
  try {
    return readFileSync(cacheFile);
  } catch {
    return undefined;
  }
}

/** Removes the caches of other bundles (other versions) in `versionsDirectory` left unused for `STALE_CACHE_MS`. */
function removeStaleVersions(versionsDirectory: string, current: string): void {
  const now = Date.now();
  for (const name of readdirSync(versionsDirectory)) {
    const directory = join(versionsDirectory, name);
    if (directory === current) continue;
    if (now - statSync(directory).mtimeMs > STALE_CACHE_MS)
      rmSync(directory, { recursive: true, force: true });
  }
}

function writeCache(cacheFile: string, data: Buffer): void {
  try {
    const directory = dirname(cacheFile);
    mkdirSync(directory, { recursive: true });
    // Written aside and renamed: a dstack starting meanwhile reads the old cache or the new, whole.
    const partial = `${cacheFile}.${process.pid}.partial`;
    writeFileSync(partial, data);
    renameSync(partial, cacheFile);
    removeStaleVersions(dirname(directory), directory);
  } catch {
    // A read-only or full cache directory: the next start compiles again.
  }
}

/** Compiles and runs the bundle `options.file`, with its code cache when one is usable. */
export function runScriptBundle<Exports>(options: ScriptBundleOptions): ScriptBundle<Exports> {
  const { file, cacheFile } = options;
  const cachedData = readCache(cacheFile);
  const script = new Script(readFileSync(file, 'utf8'), { filename: file, cachedData });
  const wrapper = script.runInThisContext() as (...parameters: unknown[]) => void;
  const module = { exports: {} as Exports };
  wrapper(module.exports, createRequire(file), module, file, dirname(file), options.importModule);
  const cacheAccepted = cachedData !== undefined && !script.cachedDataRejected;
  return {
    exports: module.exports,
    cacheAccepted,
    saveCache() {
      if (cacheFile !== null && !cacheAccepted) writeCache(cacheFile, script.createCachedData());
    },
  };
}
