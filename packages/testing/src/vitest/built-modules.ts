/**
 * Test files load a package's own modules from its build (`dist/`), by Node itself, rather than
 * from its TypeScript sources through vitest's module runner.
 *
 * Why: every test file runs in a fresh worker (vitest isolates files), so each one loads the
 * modules it imports anew. Through the module runner, each module is fetched from vitest's main
 * process and evaluated in a wrapper: a server test file spent about a second on this before its
 * first test. Node loads the same modules from `dist/` in less than half that time. The test files
 * themselves, and helpers that are not built (a package's `test/` folder), still go through vitest.
 *
 * A package whose sources are newer than its build (edited and not yet rebuilt) is loaded from
 * its sources as before, whole, so a test never mixes the two; `pnpm test` builds first.
 *
 * Other workspace packages, imported by name (`@dstack/core`), already resolve to their `dist/`;
 * `builtModulesExternal` makes vitest leave those to Node as well.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Where a package's build lies, for `server.deps.external`: any workspace package's `dist/`. */
export const builtModulesExternal = [/\/(packages|generators)\/[^/]+\/dist\//];

interface VitePlugin {
  name: string;
  enforce: 'pre';
  resolveId(
    this: { resolve(source: string, importer?: string, options?: object): Promise<{ id: string } | null> },
    source: string,
    importer: string | undefined,
    options: object,
  ): Promise<string | null>;
}

/**
 * A Vite plugin for a package's vitest project: an import that resolves to one of the package's
 * `src/**.ts` modules (not a test file) is answered with its `dist/**.js` twin, which
 * `builtModulesExternal` leaves to Node. Null when the build is missing or older than a source.
 */
export function preferBuiltModules(packageDir: string): VitePlugin | null {
  const sourceDir = join(packageDir, 'src');
  const distDir = join(packageDir, 'dist');
  if (!existsSync(distDir)) return null;
  // Against the newest emitted module, not the build record: `tsc --noEmit` on a composite project
  // rewrites `.tsbuildinfo` and emits nothing, which made a stale build look current.
  if (newestModificationMs(sourceDir) > newestModificationMs(distDir, '.js')) {
    console.warn(
      `[tests] ${relative(process.cwd(), sourceDir) || sourceDir} is newer than its build: its tests load it from source (run \`pnpm build\` for the faster load)`,
    );
    return null;
  }
  const sourcePrefix = sourceDir + sep;
  return {
    name: 'dstack-prefer-built-modules',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      if (!importer) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      const id = resolved?.id;
      if (!id?.startsWith(sourcePrefix) || !id.endsWith('.ts') || id.endsWith('.test.ts')) return null;
      const built = join(distDir, relative(sourceDir, id)).replace(/\.ts$/, '.js');
      return existsSync(built) ? built : null;
    },
  };
}

/** The newest modification under `dir` of a file whose name ends with `suffix` (any file by default). */
function newestModificationMs(dir: string, suffix = ''): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (!entry.isDirectory() && !entry.name.endsWith(suffix)) continue;
    const mtime = entry.isDirectory() ? newestModificationMs(path, suffix) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}
