// An esbuild plugin that bundles the `yaml` package from its ES modules instead of the CommonJS
// build node resolves. esbuild cannot leave out the unused parts of a CommonJS package: every
// command that checked a YAML node's kind (core's `isMap`, `isScalar`…) loaded and ran yaml's
// whole parser and stringifier (~270 KB). From the ES modules, a chunk holds what is imported
// (with `directImportsPlugin` taking the names from the modules that define them, as code
// splitting needs: through yaml's barrel, every chunk reaching it would get all of yaml).
//
// yaml ships the ES modules as its browser build: the same sources as the node build, which
// differs only in its logger, so the node build's logger is kept (warnings go through
// `process.emitWarning`, as without the bundle). Its modules only define things (none changes
// another when it loads), so one whose exports are all unused can be left out: yaml's manifest
// does not say so (`sideEffects`), this plugin does.
import { createRequire } from 'node:module';
import path from 'node:path';

/** The directory of the ES modules of the `yaml` package `fromDirectory` resolves, and its barrel. */
export function yamlEsModules(fromDirectory) {
  // `yaml/package.json` is exported; the package root is beside it.
  const manifest = createRequire(path.join(fromDirectory, 'importer.js')).resolve('yaml/package.json');
  const dist = path.join(path.dirname(manifest), 'browser', 'dist');
  return {
    dist,
    barrel: path.join(dist, 'index.js'),
    nodeLogger: path.join(path.dirname(manifest), 'dist', 'log.js'),
  };
}

/** `fromDirectory`: where `yaml` is resolved from (the package being bundled). */
export function yamlEsModulesPlugin(fromDirectory) {
  const { dist, barrel, nodeLogger } = yamlEsModules(fromDirectory);
  return {
    name: 'yaml-es-modules',
    setup(build) {
      build.onResolve({ filter: /^yaml$/ }, () => ({ path: barrel, sideEffects: false }));
      // Paths into the ES modules: yaml's own relative imports, and directImportsPlugin's.
      build.onResolve({ filter: /^(\.\.?\/|\/)/ }, (args) => {
        const file = path.resolve(args.resolveDir, args.path);
        if (!file.startsWith(dist + path.sep)) return undefined;
        if (file === path.join(dist, 'log.js')) return { path: nodeLogger, sideEffects: false };
        return { path: file, sideEffects: false };
      });
    },
  };
}
