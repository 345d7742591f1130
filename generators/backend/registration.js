/**
 * The edits that make a new backend discoverable: its entry in the one map of
 * backend packages (added, or brought up to date when the map already names the
 * type), optional peers of the server and CLI (plus the server's workspace dev
 * link), and a root tsconfig reference. Each edit is a pure function of the
 * file's text, applying it twice changes nothing, and a missing marker or a
 * conflicting entry is an error naming the file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KNOWN_BACKENDS_FILE, withKnownBackend } from './known-backends-file.js';
import { INITIAL_VERSION } from './package-manifest.js';
import { workspacePeerRange } from './workspace.js';

/** @typedef {import('./backend-names.js').BackendNames} BackendNames */

/**
 * `record` with `key: value` added, keys kept in their order (new keys last).
 * @param {Record<string, unknown> | undefined} record
 * @param {string} key
 * @param {unknown} value
 * @param {string} where for error messages
 */
function withEntry(record, key, value, where) {
  const current = record ?? {};
  if (key in current && JSON.stringify(current[key]) !== JSON.stringify(value)) {
    throw new Error(
      `${where} already has "${key}": ${JSON.stringify(current[key])}, expected ${JSON.stringify(value)}`,
    );
  }
  return { ...current, [key]: value };
}

/**
 * Lists `packageName` as an optional peer (any version of its first major) of a package.json, and
 * as a dev dependency when `devLink` is set (so the package can import it
 * inside the workspace).
 * @param {string} text the package.json content
 * @param {string} packageName
 * @param {{ devLink: boolean, file: string }} options
 * @returns {string}
 */
export function addOptionalPeer(text, packageName, { devLink, file }) {
  const manifest = JSON.parse(text);
  if (devLink) {
    manifest.devDependencies = withEntry(
      manifest.devDependencies,
      packageName,
      'workspace:^',
      `${file} devDependencies`,
    );
  }
  manifest.peerDependencies = withEntry(
    manifest.peerDependencies,
    packageName,
    workspacePeerRange(INITIAL_VERSION),
    `${file} peerDependencies`,
  );
  manifest.peerDependenciesMeta = withEntry(
    manifest.peerDependenciesMeta,
    packageName,
    { optional: true },
    `${file} peerDependenciesMeta`,
  );
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/**
 * Adds a project reference to the root tsconfig.json, after the last backend's.
 * @param {string} text the tsconfig.json content
 * @param {string} directory e.g. `packages/backend-example`
 * @param {string} [file] for error messages
 * @returns {string}
 */
export function addTsconfigReference(text, directory, file = 'tsconfig.json') {
  const tsconfig = JSON.parse(text);
  if (!Array.isArray(tsconfig.references)) throw new Error(`${file} has no "references" array`);
  /** @type {{ path: string }[]} */
  const references = tsconfig.references;
  if (references.some((reference) => reference.path === directory)) return text;
  const lastBackend = references.findLastIndex((reference) => reference.path.startsWith('packages/backend-'));
  const position = lastBackend === -1 ? references.length : lastBackend + 1;
  references.splice(position, 0, { path: directory });
  return `${JSON.stringify(tsconfig, null, 2)}\n`;
}

/**
 * Applies every registration edit to the workspace at `root`; returns the files changed.
 * @param {string} root
 * @param {BackendNames} names
 * @param {{ catalog: 'offline' | 'online' }} options the kind of the backend's catalog provider
 * @returns {string[]}
 */
export function registerBackend(root, names, { catalog }) {
  const backend = { type: names.type, packageName: names.packageName, catalog };
  /** @type {[string, (text: string, file: string) => string][]} */
  const edits = [
    [KNOWN_BACKENDS_FILE, (text, file) => withKnownBackend(text, backend, file)],
    [
      'packages/server/package.json',
      (text, file) => addOptionalPeer(text, names.packageName, { devLink: true, file }),
    ],
    [
      'packages/cli/package.json',
      (text, file) => addOptionalPeer(text, names.packageName, { devLink: false, file }),
    ],
    ['tsconfig.json', (text, file) => addTsconfigReference(text, names.directory, file)],
  ];
  // Compute every edit before writing any, so a missing anchor leaves the workspace untouched.
  const results = edits.map(([file, edit]) => {
    const path = join(root, file);
    const before = readFileSync(path, 'utf8');
    return { file, path, before, after: edit(before, file) };
  });
  const changed = results.filter(({ before, after }) => before !== after);
  for (const { path, after } of changed) writeFileSync(path, after);
  return changed.map(({ file }) => file);
}
