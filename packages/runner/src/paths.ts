import { fileURLToPath } from 'node:url';

/**
 * Absolute path of the single-file runner (`dist/dstack-runner.bundle.mjs`): it imports only
 * node built-ins, so a runtime can bind-mount it with a node binary into any container and run
 * `node <bundle> start --http-port N --home DIR`. Exists after the package is built.
 */
// Resolved from the package root: this module sits one level down both as src/paths.ts and dist/paths.js.
export const RUNNER_BUNDLE_PATH = fileURLToPath(new URL('../dist/dstack-runner.bundle.mjs', import.meta.url));

/** Absolute path of the runner's command (`dist/bin/dstack-runner.js`). */
export const RUNNER_BIN_PATH = fileURLToPath(new URL('../dist/bin/dstack-runner.js', import.meta.url));
