import { fileURLToPath } from 'node:url';

// Resolved from the package root: this module sits one level down both as src/paths.ts and dist/paths.js.

/** Absolute path of the shim's command (`dist/bin/dstack-shim.js`); exists after the package is built. */
export const SHIM_BIN_PATH = fileURLToPath(new URL('../dist/bin/dstack-shim.js', import.meta.url));
