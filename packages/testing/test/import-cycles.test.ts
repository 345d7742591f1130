/**
 * No package's modules form an import cycle (type-only and dynamic imports included): in each
 * package, domain folders build on the ones below them, and shared modules (the server's
 * `context.ts`, a page's shared types) name only what does not import them back. Every
 * `packages/*` source tree is walked, the web console's `.tsx` included. Between the server's
 * domain folders, at most one pair imports each other, and it is the one `docs/architecture.md` names.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repositoryRoot = resolve(import.meta.dirname, '../../..');
const SOURCE_FILE = /\.tsx?$/;
const TEST_FILE = /\.test(\.helpers)?\.tsx?$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === '__fixtures__' ? [] : sourceFiles(path);
    return SOURCE_FILE.test(entry.name) && !entry.name.endsWith('.d.ts') && !TEST_FILE.test(entry.name)
      ? [path]
      : [];
  });
}

/**
 * The file a relative specifier names: Node's style (`./x.js` for `x.ts` or `x.tsx`) or the
 * bundler's the console uses (`./x` for `x.ts`, `x.tsx` or `x/index.ts`).
 */
function resolveSpecifier(from: string, specifier: string, files: ReadonlySet<string>): string | null {
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.js$/, '');
  const candidates = [`${stem}.ts`, `${stem}.tsx`, base, join(base, 'index.ts'), join(base, 'index.tsx')];
  return candidates.find((candidate) => files.has(candidate)) ?? null;
}

/** The files of `files` that `file` imports by relative specifiers. */
function importsOf(file: string, files: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolveSpecifier(file, specifier, files))
    .filter((path): path is string => path !== null);
}

/** One cycle through `graph` as a list of files, or null. Depth-first, colouring files as it goes. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): string[] | null => {
    state.set(file, 'visiting');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'visiting') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    stack.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of graph.keys()) {
    if (!state.has(file)) {
      const cycle = visit(file);
      if (cycle) return cycle;
    }
  }
  return null;
}

const packageSources = readdirSync(join(repositoryRoot, 'packages'))
  .map((name) => join(repositoryRoot, 'packages', name, 'src'))
  .filter((source) => existsSync(source) && statSync(source).isDirectory());

describe('import cycles', () => {
  it('finds a cycle when there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toBeNull();
  });

  it('walks every package, the console included', () => {
    const names = packageSources.map((source) => relative(join(repositoryRoot, 'packages'), dirname(source)));
    expect(names).toEqual(
      expect.arrayContaining(['core', 'server', 'cli', 'shim', 'runner', 'web', 'catalog']),
    );
  });

  it.each(packageSources.map((source) => [relative(repositoryRoot, dirname(source)), source]))(
    '%s has none',
    (_name, source) => {
      const files = sourceFiles(source);
      const known = new Set(files);
      const graph = new Map(files.map((file) => [file, importsOf(file, known)]));
      expect(findCycle(graph)?.map((file) => relative(source, file)) ?? null).toBeNull();
    },
  );
});

/** The top-level folder of `file` under `source`, or null for a file at the top (`app.ts`, `context.ts`). */
function folderOf(source: string, file: string): string | null {
  const parts = relative(source, file).split('/');
  return parts.length > 1 ? (parts[0] as string) : null;
}

/** Pairs of folders (sorted, `a ↔ b`) where each imports the other, type imports included. */
function mutualFolderPairs(source: string): string[] {
  const files = sourceFiles(source);
  const known = new Set(files);
  const edges = new Set<string>();
  for (const file of files) {
    const from = folderOf(source, file);
    for (const imported of importsOf(file, known)) {
      const to = folderOf(source, imported);
      if (from !== null && to !== null && from !== to) edges.add(`${from} → ${to}`);
    }
  }
  return [...edges]
    .map((edge) => edge.split(' → ') as [string, string])
    .filter(([from, to]) => from < to && edges.has(`${to} → ${from}`))
    .map(([from, to]) => `${from} ↔ ${to}`);
}

describe("the server's folders", () => {
  const serverSource = join(repositoryRoot, 'packages/server/src');
  const architecture = readFileSync(join(repositoryRoot, 'docs/architecture.md'), 'utf8');

  it('import each other in at most one pair, the one docs/architecture.md names', () => {
    const named = [...architecture.matchAll(/`(\w+)` ↔ `(\w+)`/g)].map(([, a, b]) =>
      [a, b].sort().join(' ↔ '),
    );
    const pairs = mutualFolderPairs(serverSource);
    expect(pairs.length, `folder pairs importing each other: ${pairs.join(', ')}`).toBeLessThanOrEqual(1);
    expect(pairs, 'the pairs docs/architecture.md names (`a` ↔ `b`)').toEqual(named);
  });
});
