/**
 * The agent protocol is defined once, here: no other package's source spells an agent port or a
 * token variable as a literal of its own (tests may: they check the wire values).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';
import {
  DSTACK_RUNNER_HTTP_PORT,
  DSTACK_RUNNER_SSH_PORT,
  DSTACK_SHIM_HTTP_PORT,
  GATEWAY_TOKEN_ENV,
  RUNNER_TOKEN_ENV,
  SHIM_TOKEN_ENV,
} from './index.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGES = join(HERE, '../../..');
const PORTS = [DSTACK_SHIM_HTTP_PORT, DSTACK_RUNNER_HTTP_PORT, DSTACK_RUNNER_SSH_PORT].map(String);
const PORT_IN_TEXT = new RegExp(`(?<![0-9])(${PORTS.join('|')})(?![0-9])`);
const NAMES = new Set([SHIM_TOKEN_ENV, RUNNER_TOKEN_ENV, GATEWAY_TOKEN_ENV]);

/** Every non-test TypeScript source of the workspace's packages, but this module's. */
function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      return ['node_modules', 'dist', '__fixtures__'].includes(entry.name) || path === HERE
        ? []
        : sources(path);
    }
    return /\.ts$/.test(entry.name) && !/\.test(\.helpers)?\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** `file:line literal` for each literal that spells a protocol value. */
function copiesIn(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const spelled =
      (ts.isNumericLiteral(node) && PORTS.includes(node.text)) ||
      ((ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) &&
        (PORT_IN_TEXT.test(node.text) || NAMES.has(node.text)));
    if (spelled) {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${relative(PACKAGES, path)}:${line + 1} ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

// Parses every source of the workspace: seconds of CPU, more on a busy machine.
it('is the only place that spells the agent ports and token variables', { timeout: 60_000 }, () => {
  const packages = readdirSync(PACKAGES).map((name) => join(PACKAGES, name, 'src'));
  const copies = packages.flatMap((src) => {
    try {
      return sources(src).flatMap(copiesIn);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  });
  expect(copies).toEqual([]);
});
