// One ESM file for node 20 with no imports outside node built-ins: how the runner and the shim
// ship their commands (bind-mounted into containers, copied to SSH fleet hosts).
// The packages pass these options to their own esbuild (the repository root has none).

/** esbuild options bundling `entryPoint` into `outfile` (paths relative to the package being built). */
export function nodeCommandBundle(entryPoint, outfile) {
  return {
    entryPoints: [entryPoint],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
    // ssh2's optional native parts: it requires them inside try/catch and falls back to pure
    // JavaScript, which is what a bundle mounted into any image gets.
    external: ['cpu-features', '*.node'],
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
}
