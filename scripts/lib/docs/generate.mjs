/**
 * Regenerates the docs in memory: `generateDocs(root)` returns each
 * generated file's new content; `findStaleDocs(root, generated)` the files
 * whose content on disk differs. The CLI (scripts/generate-docs.mjs) writes them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  loadCore,
  loadInstalledBackends,
  loadKnownBackends,
  loadServerConfigSchema,
} from './installed-modules.mjs';
import { backendsWithoutPackage } from './known-backends.mjs';
import { renderBackendsTable, renderServerConfigDoc, spliceGeneratedBlock } from './render-docs.mjs';

export const SERVER_CONFIG_DOC = 'docs/server-config.md';
export const BACKENDS_DOC = 'docs/backends.md';

/** @returns {Promise<Map<string, string>>} relative path → content */
export async function generateDocs(root) {
  const [core, serverConfigSchema, backends, knownBackends] = await Promise.all([
    loadCore(root),
    loadServerConfigSchema(root),
    loadInstalledBackends(root),
    loadKnownBackends(root),
  ]);
  const withoutPackage = backendsWithoutPackage(knownBackends, backends);
  const backendsPath = join(root, BACKENDS_DOC);
  if (!existsSync(backendsPath))
    throw new Error(`${BACKENDS_DOC} is missing: its hand-written parts hold the generated table`);
  const backendsDoc = spliceGeneratedBlock(
    readFileSync(backendsPath, 'utf8'),
    renderBackendsTable({ backends, core, withoutPackage }),
  );
  return new Map([
    [SERVER_CONFIG_DOC, renderServerConfigDoc({ serverConfigSchema, backends })],
    [BACKENDS_DOC, backendsDoc],
  ]);
}

/**
 * The paths of `generated` (from `generateDocs`) whose file under `root` is missing or differs.
 * @param {string} root
 * @param {Map<string, string>} generated
 * @returns {string[]}
 */
export function findStaleDocs(root, generated) {
  return [...generated]
    .filter(([path, content]) => {
      const file = join(root, path);
      return !existsSync(file) || readFileSync(file, 'utf8') !== content;
    })
    .map(([path]) => path);
}
