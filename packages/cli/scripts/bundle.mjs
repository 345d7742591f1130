// Bundles the `dstack` command for its users (package.json `bin`): dist/bundle/bin/dstack.js with
// the command definitions, and the chunks of each command's implementation, loaded when it runs.
// Without it, node's module loader resolves and compiles some 250 files (zod, @dstack/core, yaml)
// on every command. The tsc output in dist/ stays the library (`import '@dstack/cli'`).
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { directImportsPlugin } from '../../../scripts/lib/direct-imports-plugin.mjs';
import { nodeCommandSplitBundle } from '../../../scripts/lib/node-bundle.mjs';
import { yamlEsModules, yamlEsModulesPlugin } from '../../../scripts/lib/yaml-es-modules-plugin.mjs';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** The barrel module `specifier` resolves to from this package. */
function barrel(specifier) {
  return fileURLToPath(import.meta.resolve(specifier));
}

// esbuild leaves the chunks of an earlier build beside the new ones: start empty.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  ...nodeCommandSplitBundle({ 'bin/dstack': 'src/bin/dstack.ts' }, 'dist/bundle', {
    // ssh2 has optional native parts it finds beside its own files; the server and the backends
    // are optional peers, loaded from where the user installed them.
    external: ['ssh2', '@dstack/server', '@dstack/backend-*'],
    // The bundle has no package.json beside it to read the version from (program.ts).
    define: { __DSTACK_CLI_VERSION__: JSON.stringify(version) },
  }),
  // `dstack ps` gets the API models, not every configuration schema `dstack apply` needs, and
  // the YAML node checks of core's error messages, not the YAML parser.
  plugins: [
    directImportsPlugin({
      filter: /[/\\]packages[/\\](cli[/\\]src[/\\].*\.ts|core[/\\]dist[/\\].*\.js)$/,
      packages: {
        '@dstack/core': barrel('@dstack/core'),
        '@dstack/core/agent-protocol': barrel('@dstack/core/agent-protocol'),
        yaml: yamlEsModules(process.cwd()).barrel,
      },
    }),
    yamlEsModulesPlugin(process.cwd()),
  ],
});
