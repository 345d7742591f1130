/**
 * Reading and editing the one map of backend packages, `KNOWN_BACKENDS` in
 * @dstack/catalog, from its TypeScript source: the generator runs before
 * anything is built, so it cannot import the module. The entries sit between
 * two marker comments as object literals of single-quoted string properties;
 * anything else between the markers is an error naming the file, so an entry
 * is never silently skipped. Entries may span lines (biome wraps long ones).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the map lives, relative to the workspace root. */
export const KNOWN_BACKENDS_FILE = 'packages/catalog/src/backends/known-backends.ts';
export const KNOWN_BACKENDS_BEGIN = '// plop:known-backends:begin';
export const KNOWN_BACKENDS_END = '// plop:known-backends:end';

/** The properties an entry is written with, in this order; others keep theirs after them. */
const PROPERTY_ORDER = ['type', 'packageName', 'catalog'];
const ENTRY = /\{([^{}]*)\}\s*,?/g;
const PROPERTY = /^([A-Za-z_$][\w$]*)\s*:\s*'([^'\\]*)'$/;

/**
 * @typedef {object} KnownBackendEntry
 * @property {string} type
 * @property {string} packageName
 * @property {string} [catalog] `offline` or `online`
 * @property {number} start offset of the entry's `{` in the file
 * @property {number} end offset just after its `}`
 * @property {Record<string, string>} properties every property, in the file's order
 */

/**
 * The block between the markers: its offsets in `text`. Throws naming `file` when a marker is missing.
 * @param {string} text
 * @param {string} file
 */
function findBlock(text, file) {
  const beginLine = text.indexOf(KNOWN_BACKENDS_BEGIN);
  const endLine = text.indexOf(KNOWN_BACKENDS_END);
  if (beginLine === -1 || endLine === -1 || endLine < beginLine) {
    throw new Error(
      `${file} lacks the lines "${KNOWN_BACKENDS_BEGIN}" and "${KNOWN_BACKENDS_END}" around the entries the generator keeps`,
    );
  }
  const start = text.indexOf('\n', beginLine) + 1;
  const end = text.lastIndexOf('\n', endLine) + 1;
  return { start, end, endLine };
}

/**
 * The entries of the map, in the file's order.
 * @param {string} text the content of known-backends.ts
 * @param {string} [file] for error messages
 * @returns {KnownBackendEntry[]}
 */
export function parseKnownBackends(text, file = KNOWN_BACKENDS_FILE) {
  const block = findBlock(text, file);
  const body = text.slice(block.start, block.end);
  /** @type {KnownBackendEntry[]} */
  const entries = [];
  for (const match of body.matchAll(ENTRY)) {
    /** @type {Record<string, string>} */
    const properties = {};
    const items = match[1]
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
    for (const item of items) {
      const property = PROPERTY.exec(item);
      if (!property) throw new Error(`${file}: cannot read "${item}" in entry {${match[1].trim()}}`);
      properties[property[1]] = property[2];
    }
    if (properties.type === undefined || properties.packageName === undefined) {
      throw new Error(`${file}: entry {${match[1].trim()}} lacks type or packageName`);
    }
    const start = block.start + (match.index ?? 0);
    entries.push({
      type: properties.type,
      packageName: properties.packageName,
      catalog: properties.catalog,
      start,
      // The body holds no braces, so the first `}` closes the entry.
      end: start + match[0].indexOf('}') + 1,
      properties,
    });
  }
  const leftover = body
    .replace(ENTRY, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('//'));
  if (leftover.length > 0) {
    throw new Error(
      `${file}: between "${KNOWN_BACKENDS_BEGIN}" and "${KNOWN_BACKENDS_END}" only entries are allowed, found: ${leftover[0]}`,
    );
  }
  const types = new Set();
  for (const { type } of entries) {
    if (types.has(type)) throw new Error(`${file} lists the type "${type}" twice`);
    types.add(type);
  }
  return entries;
}

/**
 * An entry written out: `{ type: '…', packageName: '…', catalog: '…' }`, other properties after.
 * @param {Record<string, string>} properties
 */
function renderEntry(properties) {
  const keys = [
    ...PROPERTY_ORDER.filter((key) => key in properties),
    ...Object.keys(properties).filter((key) => !PROPERTY_ORDER.includes(key)),
  ];
  return `{ ${keys.map((key) => `${key}: '${properties[key]}'`).join(', ')} }`;
}

/**
 * `text` with the map entry of `backend.type` added (before the end marker) or
 * brought up to date (package and catalog kind; other properties kept). Applying it
 * twice changes nothing. Throws when another type is listed with the same package.
 * @param {string} text the content of known-backends.ts
 * @param {{ type: string, packageName: string, catalog: 'offline' | 'online' }} backend
 * @param {string} [file] for error messages
 * @returns {string}
 */
export function withKnownBackend(text, backend, file = KNOWN_BACKENDS_FILE) {
  const entries = parseKnownBackends(text, file);
  const samePackage = entries.find(
    (entry) => entry.packageName === backend.packageName && entry.type !== backend.type,
  );
  if (samePackage) {
    throw new Error(`${file} already lists ${backend.packageName} as type "${samePackage.type}"`);
  }
  const existing = entries.find((entry) => entry.type === backend.type);
  if (existing) {
    const updated = { ...existing.properties, packageName: backend.packageName, catalog: backend.catalog };
    if (renderEntry(updated) === renderEntry(existing.properties)) return text;
    return text.slice(0, existing.start) + renderEntry(updated) + text.slice(existing.end);
  }
  const { end, endLine } = findBlock(text, file);
  const indentation = text.slice(end, endLine);
  const line = `${indentation}${renderEntry({ type: backend.type, packageName: backend.packageName, catalog: backend.catalog })},\n`;
  return text.slice(0, end) + line + text.slice(end);
}

/**
 * The map's entries in the workspace at `root`.
 * @param {string} root
 * @returns {KnownBackendEntry[]}
 */
export function readKnownBackends(root) {
  const path = join(root, KNOWN_BACKENDS_FILE);
  if (!existsSync(path)) throw new Error(`The map of backend packages ${KNOWN_BACKENDS_FILE} does not exist`);
  return parseKnownBackends(readFileSync(path, 'utf8'));
}
