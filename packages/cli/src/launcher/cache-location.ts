/**
 * Where the `dstack` launcher keeps V8's code cache: per user (`$XDG_CACHE_HOME`, else
 * `~/.cache`), under `dstack/cli-code-cache/<the bundle's content hash>/`, one file per top-level
 * command, since a cache holds the functions its run compiled and `dstack ps` compiles others
 * than `dstack apply`.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** A top-level command's name as the cache file's: `ps`, `apply`, `fleet`… */
const COMMAND_NAME = /^[a-z][a-z0-9-]{0,39}$/;

/** The cache of the run `argv` (node's `process.argv`) of the bundle `bundleHash`; null when there is no home. */
export function codeCacheFile(
  argv: readonly string[],
  bundleHash: string,
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  let root = env.XDG_CACHE_HOME;
  if (!root) {
    try {
      root = join(env.HOME || homedir(), '.cache');
    } catch {
      return null;
    }
  }
  // `dstack`, `dstack --version` and `dstack --help` share one cache.
  const command = argv[2] !== undefined && COMMAND_NAME.test(argv[2]) ? argv[2] : 'dstack';
  return join(root, 'dstack', 'cli-code-cache', bundleHash, `${command}.bin`);
}

/**
 * Whether the run `argv` should write its command's cache: not when it asks for help (it would
 * cache the help's code in place of the command's, and V8 would take it from then on).
 */
export function cachesCommandCode(argv: readonly string[]): boolean {
  return !argv.slice(2).some((argument) => argument === '-h' || argument === '--help');
}
