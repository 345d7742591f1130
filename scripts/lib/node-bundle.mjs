// Bundled ESM for node 20. One file with no imports outside node built-ins: how the runner and
// the shim ship their commands (bind-mounted into containers, copied to SSH fleet hosts). An entry
// file plus lazily loaded chunks: how the published `dstack-catalog` starts fast. One script run
// through V8's code cache by a launcher: how the published `dstack` starts faster.
// The packages pass these options to their own esbuild (the repository root has none).

const NODE_ESM = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  // Bundled CommonJS dependencies (ssh2, undici) require node built-ins, which esbuild's ESM
  // output can only do through a real `require`; ssh2 also reads `__dirname` when it loads.
  banner: {
    js: [
      "import { createRequire as __dstackCreateRequire } from 'node:module';",
      "import { dirname as __dstackDirname } from 'node:path';",
      "import { fileURLToPath as __dstackFileURLToPath } from 'node:url';",
      'const require = __dstackCreateRequire(import.meta.url);',
      'const __filename = __dstackFileURLToPath(import.meta.url);',
      'const __dirname = __dstackDirname(__filename);',
    ].join('\n'),
  },
};

/** esbuild options bundling `entryPoint` into `outfile` (paths relative to the package being built). */
export function nodeCommandBundle(entryPoint, outfile) {
  return {
    ...NODE_ESM,
    entryPoints: [entryPoint],
    outfile,
    // ssh2's optional native parts: it requires them inside try/catch and falls back to pure
    // JavaScript, which is what a bundle mounted into any image gets.
    external: ['cpu-features', '*.node'],
  };
}

/**
 * esbuild options for a published command that starts fast: each entry point (`{ 'bin/x':
 * 'src/bin/x.ts' }`) becomes one file in `outdir`, and what it imports with `await import()` a
 * chunk (`chunkNames`, under `outdir`) loaded only when used, so the node loader resolves a
 * handful of files instead of hundreds. `external` stays a real import: optional peers (the
 * server, backends) and packages with native parts.
 */
export function nodeCommandSplitBundle(
  entryPoints,
  outdir,
  { external = [], define = {}, chunkNames = 'chunks/[name]-[hash]' } = {},
) {
  return {
    ...NODE_ESM,
    entryPoints,
    outdir,
    splitting: true,
    chunkNames,
    external,
    define,
  };
}

/**
 * The parameters of the function a script bundle is: a CommonJS module's, and the `import()` its
 * launcher lends it (code compiled by `vm.Script` has none on Node 20 without a flag).
 */
export const SCRIPT_BUNDLE_PARAMETERS = [
  'exports',
  'require',
  'module',
  '__filename',
  '__dirname',
  '__importModule',
];

/**
 * esbuild options bundling `entryPoint` into `outfile` as one function expression, CommonJS
 * inside, for a launcher to compile with `vm.Script` and V8's code cache (packages/cli's
 * `src/launcher/code-cache.ts`); node's ES module loader offers no code cache on Node 20. What
 * the entry imports with `await import()` stays unrun until used: esbuild wraps such modules in
 * functions that run on first import, and turns `import()` into `require()`, so `external`
 * (packages loaded from where they are installed) must be CommonJS or node built-ins; an ES module
 * is imported through `__importModule`.
 */
export function nodeScriptBundle(entryPoint, outfile, { external = [], define = {} } = {}) {
  return {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
    entryPoints: [entryPoint],
    outfile,
    external,
    supported: { 'dynamic-import': false },
    // The bundle's modules resolve files beside them from `import.meta.url`.
    define: { ...define, 'import.meta.url': '__dstackImportMetaUrl' },
    banner: {
      js: [
        // Strict, as the ES modules it is made of are.
        `(function (${SCRIPT_BUNDLE_PARAMETERS.join(', ')}) {"use strict";`,
        'var __dstackImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
      ].join('\n'),
    },
    footer: { js: '})' },
  };
}
