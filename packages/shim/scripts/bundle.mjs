// Bundles the shim command into one ESM file with no imports outside node built-ins, so the
// server can copy it to an SSH fleet host as a single file and start it with that host's node.
// Only the process runtime is in the bundle: the docker runtime is loaded by a variable path.
import { build } from 'esbuild';
import { nodeCommandBundle } from '../../../scripts/lib/node-bundle.mjs';

await build(nodeCommandBundle('src/bin/dstack-shim.ts', 'dist/dstack-shim.bundle.mjs'));
