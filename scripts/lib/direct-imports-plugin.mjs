// An esbuild plugin that imports a workspace package's names from the modules that define them
// instead of through its barrel (`index.js`, all `export … from`). With code splitting, esbuild
// gives a chunk every module reachable through the barrel's import records, used or not: the CLI's
// `dstack ps` loaded and built every configuration schema of @dstack/core because `dstack apply`
// uses them. Without the barrel, each command's chunks hold what it imports.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** `export … from './x.js'` and `import … from './x.js'`: the relative modules a module names. */
const RELATIVE_MODULE = /(?:export|import)\s[^;'"]*?from\s*['"](\.\.?\/[^'"]+)['"]/g;

/**
 * The modules the barrel re-exports, found by following its (and its sub-barrels') relative
 * imports and re-exports, barrels (`index.js`) left out. Following them, rather than listing the
 * directory, skips the outputs of deleted sources that an incremental build leaves behind.
 */
async function definingModules(barrelFile) {
  const seen = new Set();
  const modules = [];
  const visit = async (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (path.basename(file) !== 'index.js') modules.push(file);
    const source = await readFile(file, 'utf8');
    for (const [, specifier] of source.matchAll(RELATIVE_MODULE)) {
      await visit(path.resolve(path.dirname(file), specifier));
    }
  };
  await visit(barrelFile);
  return modules;
}

/** export name -> the file of a non-barrel module exporting the very same value. */
async function exportMap(barrelFile) {
  const barrel = await import(pathToFileURL(barrelFile).href);
  const wanted = new Map(Object.entries(barrel));
  const files = new Map();
  for (const file of await definingModules(barrelFile)) {
    if (wanted.size === files.size) break;
    const module = await import(pathToFileURL(file).href);
    for (const [name, value] of Object.entries(module)) {
      if (!files.has(name) && wanted.has(name) && wanted.get(name) === value) files.set(name, file);
    }
  }
  return files;
}

/** `import { a, b as c } from 'x';` and its re-exporting twin `export { … } from 'x';`. */
const NAMED_IMPORT = /(import|export)\s*\{([^}]*)\}\s*from\s*'([^']+)';/g;

/**
 * `packages`: `{ specifier: barrel }`, the absolute path of each specifier's barrel module.
 * Sources matched by `filter` (the bundled package's own, and the modules of a workspace package
 * that import another's barrel) have their named value imports and re-exports of those
 * specifiers rewritten; names the map does not know (types) stay on the specifier, and esbuild
 * drops an import that only types use.
 */
export function directImportsPlugin({ filter, packages }) {
  return {
    name: 'direct-imports',
    async setup(build) {
      const maps = new Map();
      for (const [specifier, barrel] of Object.entries(packages)) {
        maps.set(specifier, await exportMap(barrel));
      }
      build.onLoad({ filter }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        const contents = source.replace(NAMED_IMPORT, (statement, keyword, list, specifier) => {
          const files = maps.get(specifier);
          if (!files) return statement;
          const byFile = new Map();
          const kept = [];
          for (const item of list.split(',').map((part) => part.trim())) {
            if (item === '') continue;
            const [name] = item.replace(/^type\s+/, '').split(/\s+as\s+/);
            const file = item.startsWith('type ') ? undefined : files.get(name);
            if (file) byFile.set(file, [...(byFile.get(file) ?? []), item]);
            else kept.push(item);
          }
          const imports = [...byFile].map(
            ([file, items]) => `${keyword} { ${items.join(', ')} } from '${file}';`,
          );
          if (kept.length > 0) imports.push(`${keyword} { ${kept.join(', ')} } from '${specifier}';`);
          return imports.join(' ');
        });
        return {
          contents,
          loader: args.path.endsWith('.ts') ? 'ts' : 'js',
          resolveDir: path.dirname(args.path),
        };
      });
    },
  };
}
