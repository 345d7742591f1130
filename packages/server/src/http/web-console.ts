/** Where the server finds the web console: the build of @dstack/web, a dependency of this package. */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadStaticSite, type StaticSite } from './static-files.js';

/** `dist/` of the installed @dstack/web; null when the package cannot be found. */
export function defaultWebConsoleDirectory(): string | null {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@dstack/web/package.json')), 'dist');
  } catch {
    return null;
  }
}

/**
 * The console's files from `directory` (default: @dstack/web's build); null, said in one log
 * line, when they are absent: the API works without the console.
 */
export function loadWebConsole(
  directory: string | null | undefined,
  log: (message: string) => void = (message) => console.warn(`[dstack-server] ${message}`),
): StaticSite | null {
  if (directory === null) return null;
  const resolved = directory ?? defaultWebConsoleDirectory();
  const site = resolved === null ? null : loadStaticSite(resolved);
  if (!site) {
    log(
      `The web console is not built (no index.html in ${resolved ?? '@dstack/web/dist'}): ` +
        '/ answers 404, the API works. Build it with `pnpm build` (or install @dstack/web).',
    );
  }
  return site;
}
