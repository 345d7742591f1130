// Bundles the `dstack` command for its users (package.json `bin`): dist/bundle/lib/dstack-cli.js,
// the whole CLI as one script whose commands' modules run when a command imports them, and
// dist/bundle/bin/dstack.js, the launcher that runs it through V8's code cache
// (src/launcher/). Without the bundle, node's module loader resolves and compiles some 250 files
// (zod, @dstack/core, yaml) on every command; without the cache, V8 compiles the code every
// command runs on every start. The tsc output in dist/ stays the library (`import '@dstack/cli'`).
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { directImportsPlugin } from '../../../scripts/lib/direct-imports-plugin.mjs';
import { nodeScriptBundle } from '../../../scripts/lib/node-bundle.mjs';
import { yamlEsModules, yamlEsModulesPlugin } from '../../../scripts/lib/yaml-es-modules-plugin.mjs';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const CLI_BUNDLE = 'dist/bundle/lib/dstack-cli.js';
/** ES-module-only packages the CLI imports where they are installed (optional peers). */
const ES_MODULE_PEERS = /^@dstack\/(server|backend-[a-z0-9-]+)(\/.*)?$/;

/** The barrel module `specifier` resolves to from this package. */
function barrel(specifier) {
  return fileURLToPath(import.meta.resolve(specifier));
}

/** The barrel module of `@dstack/catalog`, which the CLI reaches through core (not a dependency of its own). */
function catalogBarrel() {
  const manifest = createRequire(barrel('@dstack/core')).resolve('@dstack/catalog/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8'));
  return path.join(path.dirname(manifest), exports['.'].import);
}

/**
 * The bundle turns `import()` into `require()`, which cannot load an ES module on Node 20:
 * `src/import-module.ts` becomes the launcher's `import()`, and an `import()` of an ES-module peer
 * written anywhere else fails the build rather than the command.
 */
const importThroughLauncher = {
  name: 'import-through-launcher',
  setup(build) {
    build.onLoad({ filter: /[/\\]src[/\\]import-module\.ts$/ }, () => ({
      contents: 'export const importModule = (specifier) => __importModule(specifier);',
      loader: 'js',
    }));
    build.onResolve({ filter: ES_MODULE_PEERS }, (args) =>
      args.kind === 'dynamic-import'
        ? { errors: [{ text: `import '${args.path}' with importModule() (src/import-module.ts)` }] }
        : undefined,
    );
  },
};

// Leftovers of an earlier build (its chunks) would ship with the package: start empty.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  ...nodeScriptBundle('src/bin/main.ts', CLI_BUNDLE, {
    // ssh2 has optional native parts it finds beside its own files, and undici is loaded only for
    // a caller's dispatcher; the server and the backends are optional peers, loaded from where the
    // user installed them.
    external: ['ssh2', 'undici', '@dstack/server', '@dstack/backend-*'],
    // The bundle has no package.json beside it to read the version from (program.ts).
    define: { __DSTACK_CLI_VERSION__: JSON.stringify(version) },
  }),
  // `dstack ps` runs the API models' modules, not every configuration schema's `dstack apply`
  // needs, and the YAML node checks of core's error messages, not the YAML parser.
  plugins: [
    importThroughLauncher,
    directImportsPlugin({
      filter: /[/\\]packages[/\\](cli[/\\]src[/\\].*\.ts|core[/\\]dist[/\\].*\.js)$/,
      packages: {
        '@dstack/core': barrel('@dstack/core'),
        '@dstack/core/agent-protocol': barrel('@dstack/core/agent-protocol'),
        '@dstack/catalog': catalogBarrel(),
        yaml: yamlEsModules(process.cwd()).barrel,
      },
    }),
    yamlEsModulesPlugin(process.cwd()),
  ],
});

// The cache directory is named by the bundle's content, so a cache is never used with other code.
const bundleHash = createHash('sha256').update(readFileSync(CLI_BUNDLE)).digest('hex').slice(0, 16);

await build({
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  entryPoints: ['src/launcher/dstack-launcher.ts'],
  outfile: 'dist/bundle/bin/dstack.js',
  define: { __DSTACK_CLI_BUNDLE_HASH__: JSON.stringify(bundleHash) },
});
// The package is `"type": "module"`; the launcher is CommonJS (node starts it without its ES module loader).
writeFileSync('dist/bundle/bin/package.json', `${JSON.stringify({ type: 'commonjs' })}\n`);
