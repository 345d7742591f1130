// Bundles the shim command into one ESM file with no imports outside node built-ins, so the
// server can copy it to an SSH fleet host as a single file and start it with that host's node.
// Only the process runtime is in the bundle: the docker runtime is loaded by a variable path.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/bin/dstack-shim.ts'],
  outfile: 'dist/dstack-shim.bundle.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  // Bundled CommonJS dependencies (undici) call require() for node built-ins.
  banner: {
    js: "import { createRequire as __dstackCreateRequire } from 'node:module'; const require = __dstackCreateRequire(import.meta.url);",
  },
});
