// Bundles the `dstack` command for its users (package.json `bin`): dist/bundle/bin/dstack.js with
// the command definitions, and one chunk per command implementation, loaded when it runs. Without
// it, node's module loader resolves and compiles some 250 files (zod, @dstack/core, undici, yaml)
// on every command. The tsc output in dist/ stays the library (`import '@dstack/cli'`).
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';
import { nodeCommandSplitBundle } from '../../../scripts/lib/node-bundle.mjs';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

await build(
  nodeCommandSplitBundle({ 'bin/dstack': 'src/bin/dstack.ts' }, 'dist/bundle', {
    // ssh2 has optional native parts it finds beside its own files; the server and the backends
    // are optional peers, loaded from where the user installed them.
    external: ['ssh2', '@dstack/server', '@dstack/backend-*'],
    // The bundle has no package.json beside it to read the version from (program.ts).
    define: { __DSTACK_CLI_VERSION__: JSON.stringify(version) },
  }),
);
