// Bundles the runner command into one ESM file with no imports outside node built-ins, so it
// can be bind-mounted into any container next to a node binary.
import { build } from 'esbuild';
import { nodeCommandBundle } from '../../../scripts/lib/node-bundle.mjs';

await build(nodeCommandBundle('src/bin/dstack-runner.ts', 'dist/dstack-runner.bundle.mjs'));
