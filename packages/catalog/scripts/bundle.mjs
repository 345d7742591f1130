// Bundles the `dstack-catalog` command for its users (package.json `bin`): the entry and the
// chunks its commands load when they run, all in dist/bundle/. That directory is two levels below
// the package root, as dist/bin/ and dist/providers/ are, so the paths the code finds beside
// itself (../../package.json, the snapshot in ../../assets/snapshot/) hold in the bundle too.
// The tsc output in dist/ stays the library (`import '@dstack/catalog'`).
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { nodeCommandSplitBundle } from '../../../scripts/lib/node-bundle.mjs';

// esbuild leaves the chunks of an earlier build beside the new ones: start empty.
rmSync('dist/bundle', { recursive: true, force: true });

await build(
  nodeCommandSplitBundle({ 'dstack-catalog': 'src/bin/dstack-catalog.ts' }, 'dist/bundle', {
    // Backends (their catalog providers) are loaded from where the user installed them.
    external: ['@dstack/backend-*'],
    chunkNames: '[name]-[hash]',
  }),
);
