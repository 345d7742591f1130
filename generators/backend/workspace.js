/**
 * What the generator reads from the workspace instead of hard-coding it: the
 * pnpm catalog (shared tool versions), the Node engine range and license, the
 * backend types already known, and the packages already present.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listWorkspacePackages, readCatalog } from '../../scripts/lib/workspace-packages.mjs';
import { KNOWN_BACKENDS_FILE, readKnownBackends } from './known-backends-file.js';

/**
 * @param {string} path
 * @returns {any}
 */
export function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`Cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * The names in the `catalog:` section of pnpm-workspace.yaml (the shared
 * dependency versions), read as the release scripts read it.
 * @param {string} root
 * @returns {Set<string>}
 */
export function readCatalogNames(root) {
  const catalog = readCatalog(root);
  if (catalog.size === 0) {
    throw new Error(
      `${join(root, 'pnpm-workspace.yaml')} has no "catalog:" entries; the generator takes tool versions from it`,
    );
  }
  return new Set(catalog.keys());
}

/**
 * `catalog:` for each dependency, after checking the workspace catalog has it,
 * so a generated package never pins its own version of a shared tool.
 * @param {string} root
 * @param {readonly string[]} dependencies
 * @returns {Record<string, string>}
 */
export function catalogDependencies(root, dependencies) {
  const catalog = readCatalogNames(root);
  const missing = dependencies.filter((name) => !catalog.has(name));
  if (missing.length > 0) {
    throw new Error(
      `pnpm-workspace.yaml's catalog lacks ${missing.join(', ')}; add ${missing.length === 1 ? 'it' : 'them'} there first`,
    );
  }
  return Object.fromEntries(dependencies.map((name) => [name, 'catalog:']));
}

/**
 * The map of backend packages (`KNOWN_BACKENDS` of @dstack/catalog) as type → package.
 * @param {string} root
 * @returns {Map<string, string>}
 */
export function readBackendPackages(root) {
  return new Map(readKnownBackends(root).map(({ type, packageName }) => [type, packageName]));
}

/**
 * Why a backend with these names cannot be generated here, or `undefined`. A type the
 * map lists is taken only when its package exists in the workspace: the map may name a
 * backend before anyone has written it, and generating it is how it gets written.
 * @param {string} root
 * @param {import('./backend-names.js').BackendNames} names
 * @returns {string | undefined}
 */
export function backendConflict(root, names) {
  if (existsSync(join(root, names.directory))) return `${names.directory} already exists`;
  const workspacePackages = new Map(listWorkspacePackages(root).map((pkg) => [pkg.name, pkg.relativeDir]));
  const existingPackage = workspacePackages.get(names.packageName);
  if (existingPackage !== undefined) return `${names.packageName} already exists in ${existingPackage}`;
  for (const { type, packageName } of readKnownBackends(root)) {
    if (type === names.type && workspacePackages.has(packageName)) {
      return `backend type "${type}" is already taken by ${packageName} (${workspacePackages.get(packageName)})`;
    }
    if (type !== names.type && packageName === names.packageName) {
      return `${names.packageName} is already listed as type "${type}" in ${KNOWN_BACKENDS_FILE}`;
    }
  }
  return undefined;
}

/**
 * Facts the generated package.json copies from the workspace.
 * @param {string} root
 * @returns {{ engines: Record<string, string>, license: string }}
 */
export function workspaceFacts(root) {
  const rootManifest = readJson(join(root, 'package.json'));
  const coreManifest = readJson(join(root, 'packages/core/package.json'));
  if (!rootManifest.engines?.node) throw new Error('The root package.json has no engines.node');
  if (!coreManifest.license) throw new Error('packages/core/package.json has no license');
  return { engines: { node: rootManifest.engines.node }, license: coreManifest.license };
}

/**
 * The peer range on a workspace package at `version`: any later version of the same
 * major (`workspace:>=0.1.0 <1.0.0`). Not `workspace:^`, which packs to `^0.1.0` and
 * excludes 0.2.0: changesets would then bump every peer dependent a major, taking
 * 0.x packages to 1.0.0 by accident.
 * @param {string} version
 * @returns {string}
 */
export function workspacePeerRange(version) {
  const major = Number.parseInt(version.split('.')[0] ?? '', 10);
  if (!Number.isInteger(major)) throw new Error(`Not a semver version: ${JSON.stringify(version)}`);
  return `workspace:>=${version} <${major + 1}.0.0`;
}

/**
 * The version of the workspace package `packageName` (`@dstack/core` → packages/core).
 * @param {string} root
 * @param {string} packageName
 * @returns {string}
 */
export function workspacePackageVersion(root, packageName) {
  const directory = packageName.replace(/^@dstack\//, '');
  return readJson(join(root, 'packages', directory, 'package.json')).version;
}
