/**
 * The vitest project of a workspace package (`packages/<name>/vitest.config.ts`), the same for
 * every package: its `src/` and `test/` test files, live-cloud `*.int.test.ts` left out, generous
 * named timeouts, and the package's own modules loaded from its build (`built-modules.ts`).
 */
import { dirname, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineProject, type UserWorkspaceConfig } from 'vitest/config';
import { builtModulesExternal, preferBuiltModules } from './built-modules.js';

/**
 * @param configUrl the config file's `import.meta.url` (its folder is the package's)
 * @param name the project's name, the package's (`@dstack/core`)
 */
export function packageTestProject(configUrl: string, name: string): UserWorkspaceConfig {
  const packageDir = dirname(fileURLToPath(configUrl));
  return defineProject({
    plugins: [preferBuiltModules(packageDir)],
    test: {
      name,
      // Generous and named: on a loaded 2-core machine a test that starts child processes (the CLI,
      // a server) passes vitest's 5 s default without anything being wrong.
      testTimeout: 30_000,
      hookTimeout: 60_000,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: ['**/*.int.test.ts'],
      server: { deps: { external: builtModulesExternal } },
      // Names a file that blocks its worker long enough to fail the run (event-loop-watch.ts).
      setupFiles: [
        fileURLToPath(
          new URL(`./event-loop-watch${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
        ),
      ],
    },
  });
}
