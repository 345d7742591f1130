// Bundles the runner command into one ESM file with no imports outside node built-ins, so it
// can be bind-mounted into any container next to a node binary.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/bin/dstack-runner.ts'],
  outfile: 'dist/dstack-runner.bundle.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
});
