// An esbuild plugin that imports a workspace package's names from the modules that define them
// instead of through its barrel (`index.js`, all `export … from`). With code splitting, esbuild
// gives a chunk every module reachable through the barrel's import records, used or not: the CLI's
// `dstack ps` loaded and built every configuration schema of @dstack/core because `dstack apply`
// uses them. Without the barrel, each command's chunks hold what it imports.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The `.js` modules under `directory`, barrels, tests and fixtures left out. */
async function definingModules(directory) {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js') && entry.name !== 'index.js')
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name))
    .filter((file) => !/\.test\.js$|__fixtures__/.test(file));
}

/** export name -> the file of a non-barrel module exporting the very same value. */
async function exportMap(barrelFile, distDirectory) {
  const barrel = await import(pathToFileURL(barrelFile).href);
  const wanted = new Map(Object.entries(barrel));
  const files = new Map();
  for (const file of await definingModules(distDirectory)) {
    if (wanted.size === files.size) break;
    const module = await import(pathToFileURL(file).href);
    for (const [name, value] of Object.entries(module)) {
      if (!files.has(name) && wanted.has(name) && wanted.get(name) === value) files.set(name, file);
    }
  }
  return files;
}

const NAMED_IMPORT = /import\s*\{([^}]*)\}\s*from\s*'([^']+)';/g;

/**
 * `packages`: `{ specifier: { barrel, dist } }`, absolute paths of the barrel module and of the
 * directory holding its modules. Sources matched by `filter` have their named value imports of
 * those specifiers rewritten; names the map does not know (types) stay on the specifier, and
 * esbuild drops an import that only types use.
 */
export function directImportsPlugin({ filter, packages }) {
  return {
    name: 'direct-imports',
    async setup(build) {
      const maps = new Map();
      for (const [specifier, { barrel, dist }] of Object.entries(packages)) {
        maps.set(specifier, await exportMap(barrel, dist));
      }
      build.onLoad({ filter }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        const contents = source.replace(NAMED_IMPORT, (statement, list, specifier) => {
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
            ([file, items]) => `import { ${items.join(', ')} } from '${file}';`,
          );
          if (kept.length > 0) imports.push(`import { ${kept.join(', ')} } from '${specifier}';`);
          return imports.join(' ');
        });
        return { contents, loader: 'ts', resolveDir: path.dirname(args.path) };
      });
    },
  };
}
