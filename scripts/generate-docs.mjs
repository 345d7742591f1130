#!/usr/bin/env node
/**
 * Writes the docs generated from the code: docs/server-config.md (config.yml
 * reference from the server's and every backend's zod schemas) and the
 * capability table of docs/backends.md. Reads the built `dist/` of core,
 * server and each packages/backend-*; `pnpm run docs` compiles them first.
 *
 *   node scripts/generate-docs.mjs           write the files
 *   node scripts/generate-docs.mjs --check   exit 1 when a committed file is out of date
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findStaleDocs, generateDocs } from './lib/docs/generate.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');

const generated = await generateDocs(root);
const stale = findStaleDocs(root, generated);
if (!check) {
  for (const path of stale) {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, generated.get(path));
  }
}
if (check) {
  if (stale.length > 0) {
    console.error(`Out of date: ${stale.join(', ')}. Run pnpm run docs.`);
    process.exit(1);
  }
  console.log('Docs are up to date.');
} else {
  console.log(stale.length > 0 ? `Wrote ${stale.join(', ')}` : 'Docs are up to date.');
}
