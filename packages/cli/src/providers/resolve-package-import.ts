/**
 * Finds the file `import(specifier)` would load if it were written in a module of
 * `fromDirectory`: Node's ESM package resolution (node_modules lookup up the parents, the
 * package's `exports` with the `node`/`import`/`default` conditions, else `main`). Node can
 * only resolve from the importing module's own location (`import.meta.resolve` takes no
 * parent without a flag, and `createRequire` uses the `require` condition), so a provider
 * package named in a configuration is resolved here, from the configuration's directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The export conditions of `import()` in Node, in no particular order (the package's order decides). */
const IMPORT_CONDITIONS = new Set(['node', 'import', 'default']);

/** A package cannot be found, or does not export what is asked; `message` says which. */
export class PackageResolutionError extends Error {
  override readonly name = 'PackageResolutionError';
}

/** `@scope/name/sub/path` → `{name: '@scope/name', subpath: './sub/path'}`. */
export function splitPackageSpecifier(specifier: string): { name: string; subpath: string } {
  const parts = specifier.split('/');
  const nameParts = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, nameParts).join('/');
  const valid = /^(@[^/@\s]+\/)?[^/@\s.][^/\s]*$/.test(name) && parts.length >= nameParts;
  if (!valid) throw new PackageResolutionError(`'${specifier}' is not a valid package name`);
  const rest = parts.slice(nameParts);
  return { name, subpath: rest.length === 0 ? '.' : `./${rest.join('/')}` };
}

/** The package's directory: `node_modules/<name>` in `fromDirectory` or the nearest parent having it. */
function findPackageDirectory(name: string, fromDirectory: string): string | undefined {
  let directory = resolve(fromDirectory);
  for (;;) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** A target of `exports`, with a pattern's `*` replaced: a path, null (excluded) or undefined (no match). */
function resolveTarget(target: unknown, patternMatch: string | undefined): string | null | undefined {
  if (typeof target === 'string') {
    if (!target.startsWith('./')) return undefined;
    return patternMatch === undefined ? target : target.replaceAll('*', patternMatch);
  }
  if (target === null) return null;
  if (Array.isArray(target)) {
    for (const item of target) {
      const resolved = resolveTarget(item, patternMatch);
      if (resolved !== undefined) return resolved;
    }
    return undefined;
  }
  if (typeof target === 'object') {
    for (const [condition, value] of Object.entries(target as Record<string, unknown>)) {
      if (!IMPORT_CONDITIONS.has(condition)) continue;
      const resolved = resolveTarget(value, patternMatch);
      if (resolved !== undefined) return resolved;
    }
  }
  return undefined;
}

/** `exports` as a subpath map: a bare target or a conditions object is the export of `.`. */
function subpathMap(exports: unknown): Record<string, unknown> {
  if (typeof exports === 'object' && exports !== null && !Array.isArray(exports)) {
    const keys = Object.keys(exports);
    if (keys.length > 0 && keys.every((key) => key.startsWith('.')))
      return exports as Record<string, unknown>;
  }
  return { '.': exports };
}

/** The target `exports` gives `subpath`, trying exact keys first, then the longest matching `*` pattern. */
function resolveExports(exports: unknown, subpath: string): string | null | undefined {
  const map = subpathMap(exports);
  if (Object.hasOwn(map, subpath) && !subpath.includes('*')) return resolveTarget(map[subpath], undefined);
  let best: { key: string; match: string } | undefined;
  for (const key of Object.keys(map)) {
    const star = key.indexOf('*');
    if (star === -1) continue;
    const prefix = key.slice(0, star);
    const suffix = key.slice(star + 1);
    if (!subpath.startsWith(prefix) || !subpath.endsWith(suffix) || subpath.length < key.length) continue;
    if (best && best.key.indexOf('*') >= prefix.length) continue;
    best = { key, match: subpath.slice(prefix.length, subpath.length - suffix.length) };
  }
  return best ? resolveTarget(map[best.key], best.match) : undefined;
}

/**
 * The absolute path of the file `import(specifier)` loads from a module in `fromDirectory`.
 * Throws `PackageResolutionError` when no `node_modules` up the parents has the package, or
 * when the package does not export the subpath for `import`.
 */
export function resolvePackageImport(specifier: string, fromDirectory: string): string {
  const { name, subpath } = splitPackageSpecifier(specifier);
  const packageDirectory = findPackageDirectory(name, fromDirectory);
  if (packageDirectory === undefined) {
    throw new PackageResolutionError(
      `cannot find package '${name}' in node_modules of ${resolve(fromDirectory)} or its parents`,
    );
  }
  const manifestPath = join(packageDirectory, 'package.json');
  let manifest: { exports?: unknown; main?: unknown };
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as typeof manifest;
  } catch (error) {
    throw new PackageResolutionError(`cannot read ${manifestPath}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (manifest.exports !== undefined) {
    const target = resolveExports(manifest.exports, subpath);
    if (typeof target !== 'string') {
      throw new PackageResolutionError(
        `package '${name}' does not export '${subpath}' for import (see "exports" in ${manifestPath})`,
      );
    }
    return join(packageDirectory, target);
  }
  if (subpath !== '.') return join(packageDirectory, subpath);
  return legacyMainFile(packageDirectory, manifest.main);
}

/** `main` as Node's ESM loader reads it without `exports`: with `.js` or `/index.js` tried, else `index.js`. */
function legacyMainFile(packageDirectory: string, main: unknown): string {
  const candidates = typeof main === 'string' ? [main, `${main}.js`, join(main, 'index.js')] : [];
  const found = candidates.map((file) => join(packageDirectory, file)).find((file) => existsSync(file));
  return found ?? join(packageDirectory, 'index.js');
}
