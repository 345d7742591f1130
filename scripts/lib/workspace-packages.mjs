/**
 * The workspace's packages as pnpm sees them: the `packages:` globs of
 * pnpm-workspace.yaml (only `dir/*` and plain directories, which is all this
 * repository uses), each with its parsed package.json.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * @typedef {object} WorkspacePackage
 * @property {string} name npm name, e.g. `@dstack/core`
 * @property {string} dir absolute directory
 * @property {string} relativeDir directory relative to the workspace root, e.g. `packages/core`
 * @property {Record<string, unknown>} manifest the parsed package.json
 * @property {boolean} isPrivate whether `private: true` (never published)
 */

/** The `packages:` entries of pnpm-workspace.yaml (a block list of strings). */
export function readWorkspaceGlobs(root) {
  const text = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const globs = [];
  let inPackages = false;
  for (const line of text.split('\n')) {
    if (/^packages:\s*$/.test(line)) {
      inPackages = true;
      continue;
    }
    if (!inPackages) continue;
    const item = /^\s+-\s+['"]?([^'"#\s]+)['"]?/.exec(line);
    if (item) globs.push(item[1]);
    else if (/^\S/.test(line)) break;
  }
  if (globs.length === 0) throw new Error(`${join(root, 'pnpm-workspace.yaml')} lists no packages`);
  return globs;
}

/**
 * The default pnpm catalog of pnpm-workspace.yaml (`catalog:` block of
 * `name: version` lines), what `"catalog:"` specifiers stand for.
 * @returns {Map<string, string>}
 */
export function readCatalog(root) {
  const text = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const catalog = new Map();
  let inCatalog = false;
  for (const line of text.split('\n')) {
    if (/^catalog:\s*$/.test(line)) {
      inCatalog = true;
      continue;
    }
    if (!inCatalog || /^\s*(#.*)?$/.test(line)) continue;
    if (/^\S/.test(line)) break;
    const entry = /^\s+['"]?([^'":\s]+)['"]?\s*:\s*['"]?([^'"#\s]+)/.exec(line);
    if (entry) catalog.set(entry[1], entry[2]);
  }
  return catalog;
}

function expandGlob(root, glob) {
  if (glob.endsWith('/*')) {
    const parent = glob.slice(0, -2);
    if (!existsSync(join(root, parent))) return [];
    return readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${parent}/${entry.name}`);
  }
  if (glob.includes('*')) throw new Error(`Unsupported workspace glob "${glob}" in pnpm-workspace.yaml`);
  return [glob];
}

/** Every workspace package with a package.json, sorted by directory. */
export function listWorkspacePackages(root) {
  /** @type {WorkspacePackage[]} */
  const packages = [];
  for (const glob of readWorkspaceGlobs(root)) {
    for (const relativeDir of expandGlob(root, glob)) {
      const manifestPath = join(root, relativeDir, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      packages.push({
        name: manifest.name,
        dir: join(root, relativeDir),
        relativeDir,
        manifest,
        isPrivate: manifest.private === true,
      });
    }
  }
  return packages.sort((a, b) => a.relativeDir.localeCompare(b.relativeDir));
}

/** The packages `changeset publish` would publish: not private. */
export function listPublicPackages(root) {
  return listWorkspacePackages(root).filter((pkg) => !pkg.isPrivate);
}
