// Bundled ESM for node 20. One file with no imports outside node built-ins: how the runner and
// the shim ship their commands (bind-mounted into containers, copied to SSH fleet hosts). An entry
// file plus lazily loaded chunks: how the published `dstack` and `dstack-catalog` start fast.
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
