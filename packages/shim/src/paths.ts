import { fileURLToPath } from 'node:url';

// Resolved from the package root: this module sits one level down both as src/paths.ts and dist/paths.js.

/** Absolute path of the shim's command (`dist/bin/dstack-shim.js`); exists after the package is built. */
export const SHIM_BIN_PATH = fileURLToPath(new URL('../dist/bin/dstack-shim.js', import.meta.url));

/** The shim's single-file bundle and the runner's copy beside it (`scripts/bundle.mjs`). */
export const SHIM_BUNDLE_PATH = fileURLToPath(new URL('../dist/dstack-shim.bundle.mjs', import.meta.url));
export const SHIM_RUNNER_BUNDLE_PATH = fileURLToPath(
  new URL('../dist/dstack-runner.bundle.mjs', import.meta.url),
);
/** The gateway agent's single-file bundle (`gateway.mjs` in the agent runtime). */
export const GATEWAY_BUNDLE_PATH = fileURLToPath(
  new URL('../dist/dstack-gateway.bundle.mjs', import.meta.url),
);
