/**
 * The docs describe the backends of the one map of backend packages
 * (`KNOWN_BACKENDS` of @dstack/catalog, the map the server discovers backends
 * by and `dstack-catalog collect` loads providers by): every backend package of
 * the workspace must be listed there as itself, and the listed types whose
 * package does not exist yet are named as such.
 */

/** Where the map is written; error messages send the reader there. */
export const KNOWN_BACKENDS_FILE = 'packages/catalog/src/backends/known-backends.ts';

/**
 * @typedef {object} KnownBackend
 * @property {string} type
 * @property {string} packageName
 * @property {'offline' | 'online'} [catalog]
 */

/**
 * Checks the workspace's backend packages against the map; returns the map's
 * entries that have no package in the workspace. Throws, naming the package and
 * the map's file, when a package is missing from the map or differs from its entry.
 * @param {readonly KnownBackend[]} knownBackends
 * @param {readonly { packageName: string, relativeDir: string, plugin: { type: string, catalogProvider?: { kind?: string } } }[]} installed
 * @returns {KnownBackend[]}
 */
export function backendsWithoutPackage(knownBackends, installed) {
  const problems = [];
  for (const { packageName, relativeDir, plugin } of installed) {
    const entry = knownBackends.find((backend) => backend.type === plugin.type);
    const catalogKind = plugin.catalogProvider?.kind;
    if (entry === undefined) {
      problems.push(`${packageName} (${relativeDir}) provides type "${plugin.type}", which is not listed`);
    } else if (entry.packageName !== packageName) {
      problems.push(
        `"${plugin.type}" is listed as ${entry.packageName}, but ${relativeDir} is ${packageName}`,
      );
    } else if (entry.catalog !== catalogKind) {
      problems.push(
        `"${plugin.type}" is listed with catalog ${entry.catalog ?? '(none)'}, but ${packageName}'s catalogProvider is ${catalogKind ?? '(none)'}`,
      );
    }
  }
  if (problems.length > 0) {
    throw new Error(`${KNOWN_BACKENDS_FILE} disagrees with the workspace:\n  ${problems.join('\n  ')}`);
  }
  const installedPackages = new Set(installed.map(({ packageName }) => packageName));
  return knownBackends.filter(({ packageName }) => !installedPackages.has(packageName));
}
