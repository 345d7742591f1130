/**
 * Every backend package in the repository follows the shape `pnpm plop backend`
 * generates (STYLE §14): a valid descriptor as its default export, a README and
 * a changelog, config-model tests and a conformance test, and registration
 * where the server and CLI discover backends. A failure names the package and
 * what it lacks. Source files stay under 600 lines, and the server's sources
 * re-type nothing through `as unknown as`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertBackendPlugin } from '@dstack/core';
import { describe, expect, it } from 'vitest';

const repositoryRoot = resolve(import.meta.dirname, '../../..');
/** The one map of backend packages (server discovery, catalog collect, docs); a module without imports. */
const DISCOVERY_MAP = 'packages/catalog/src/backends/known-backends.ts';

interface Manifest {
  name: string;
  version: string;
  exports?: Record<string, { source?: string } | string>;
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

function readManifest(directory: string): Manifest {
  return JSON.parse(readFileSync(join(repositoryRoot, directory, 'package.json'), 'utf8')) as Manifest;
}

const backendDirectories = readdirSync(join(repositoryRoot, 'packages'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name.startsWith('backend-'))
  .filter((entry) => existsSync(join(repositoryRoot, 'packages', entry.name, 'package.json')))
  .map((entry) => `packages/${entry.name}`);

const serverManifest = readManifest('packages/server');
const cliManifest = readManifest('packages/cli');
const rootTsconfig = JSON.parse(readFileSync(join(repositoryRoot, 'tsconfig.json'), 'utf8')) as {
  references: { path: string }[];
};

/** The TypeScript entry of a package (`exports["."].source`), which tests import; default `src/index.ts`. */
function sourceEntry(manifest: Manifest): string {
  const entry = manifest.exports?.['.'];
  return (typeof entry === 'object' ? entry.source : undefined) ?? 'src/index.ts';
}

/** The source files of a package, relative to its `src/`. */
function sourceFiles(directory: string): string[] {
  const source = join(repositoryRoot, directory, 'src');
  return existsSync(source) ? readdirSync(source, { recursive: true, encoding: 'utf8' }) : [];
}

it('finds the backend packages', () => {
  expect(backendDirectories, 'no packages/backend-* found').toContain('packages/backend-local');
});

/**
 * `workspace:>=0.1.0 <1.0.0`: `workspace:^` would pack to `^0.1.0`, which excludes the peer's
 * next minor and makes changesets bump every dependent a major (0.x → 1.0.0).
 */
const SAME_MAJOR_WORKSPACE_RANGE = /^workspace:>=\d+\.\d+\.\d+ <\d+\.0\.0$/;

describe.each(backendDirectories)('%s', (directory) => {
  const manifest = readManifest(directory);
  const name = manifest.name;

  it('is named @dstack/backend-<name> after its directory, publishable', () => {
    expect(name, `${directory}: package.json name`).toBe(`@dstack/${directory.slice('packages/'.length)}`);
    expect(manifest.publishConfig?.access, `${name}: publishConfig.access`).toBe('public');
    expect(
      manifest.peerDependencies?.['@dstack/core'],
      `${name}: peerDependencies lacks @dstack/core (as a same-major range)`,
    ).toMatch(SAME_MAJOR_WORKSPACE_RANGE);
    expect(
      manifest.dependencies?.['@dstack/core'],
      `${name}: @dstack/core must be a peer, not a dependency`,
    ).toBe(undefined);
  });

  it('has a README and a CHANGELOG', () => {
    for (const file of ['README.md', 'CHANGELOG.md']) {
      expect(existsSync(join(repositoryRoot, directory, file)), `${name}: missing ${file}`).toBe(true);
    }
  });

  it('exports a valid plugin descriptor as its default export, with VERSION', async () => {
    const entry = manifest.exports?.['.'];
    const source = typeof entry === 'object' ? entry.source : undefined;
    expect(source, `${name}: package.json exports["."].source (the entry tests import)`).toBeTypeOf('string');

    const module = (await import(pathToFileURL(join(repositoryRoot, directory, source ?? '')).href)) as {
      VERSION?: unknown;
    };

    expect(() => assertBackendPlugin(module, name), `${name}: default export`).not.toThrow();
    expect(module.VERSION, `${name}: VERSION export (equal to package.json's version)`).toBe(
      manifest.version,
    );
  });

  it('has config-model tests and a conformance test running testBackend', () => {
    const files = sourceFiles(directory);
    const conformance = files.filter((file) => file.endsWith('-conformance.test.ts'));

    expect(
      files.some((file) => file.endsWith('-config.test.ts')),
      `${name}: missing src/<name>-config.test.ts`,
    ).toBe(true);
    expect(conformance, `${name}: missing src/<name>-conformance.test.ts`).not.toEqual([]);
    const callsSuite = conformance.some((file) =>
      readFileSync(join(repositoryRoot, directory, 'src', file), 'utf8').includes('testBackend('),
    );
    expect(callsSuite, `${name}: its conformance test does not call testBackend() from @dstack/testing`).toBe(
      true,
    );
  });

  it('is registered where the server and CLI discover backends', async () => {
    const { KNOWN_BACKENDS } = (await import(pathToFileURL(join(repositoryRoot, DISCOVERY_MAP)).href)) as {
      KNOWN_BACKENDS: { type: string; packageName: string; catalog?: string }[];
    };
    const { default: plugin } = (await import(
      pathToFileURL(join(repositoryRoot, directory, sourceEntry(manifest))).href
    )) as { default: { type?: unknown; catalogProvider?: { kind?: unknown } } };
    const type = typeof plugin.type === 'string' ? plugin.type : '(the default export names no type)';
    const entry = KNOWN_BACKENDS.find((backend) => backend.type === type);

    expect(entry?.packageName, `${name}: no entry "${type}" in ${DISCOVERY_MAP}`).toBe(name);
    expect(
      entry?.catalog,
      `${name}: the catalog kind of "${type}" in ${DISCOVERY_MAP} differs from its catalogProvider's`,
    ).toBe(plugin.catalogProvider?.kind);
    expect(serverManifest.devDependencies?.[name], `${name}: not in packages/server devDependencies`).toBe(
      'workspace:^',
    );
    for (const [consumer, consumerManifest] of [
      ['packages/server', serverManifest],
      ['packages/cli', cliManifest],
    ] as const) {
      expect(
        consumerManifest.peerDependencies?.[name],
        `${name}: not a peerDependency (same-major range) of ${consumer}`,
      ).toMatch(SAME_MAJOR_WORKSPACE_RANGE);
      expect(
        consumerManifest.peerDependenciesMeta?.[name]?.optional,
        `${name}: not marked optional in ${consumer} peerDependenciesMeta`,
      ).toBe(true);
    }
    expect(
      rootTsconfig.references.map((reference) => reference.path),
      `${name}: no reference in the root tsconfig.json`,
    ).toContain(directory);
  });
});

/** The longest a source file may be: past it, split it by responsibility. */
const MAX_SOURCE_LINES = 600;
/** Where the repository's own sources are (each walked whole, but for build output and fixtures). */
const SOURCE_ROOTS = ['packages', 'bench', 'scripts', 'generators'];
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', 'coverage', '.turbo', '__fixtures__']);
const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Tests may run longer (one file per scenario reads better than an arbitrary split). */
const TEST_FILE = /\.test\.tsx?$/;
/** The files the line limit leaves out, each with why: generated code and data tables, not logic. */
const LONG_FILES_ALLOWED: readonly { pattern: RegExp; why: string }[] = [
  { pattern: /\.d\.ts$/, why: 'declarations generated by tsc' },
  {
    pattern: /^packages\/testing\/src\/emulators\/[^/]+\/[^/]+-emulator-data\.ts$/,
    why: "an emulator's data table (instance types, prices, images)",
  },
];

/** Source files under `directory` (relative to the repository root), tests and allowed ones left out. */
function limitedSourceFiles(directory: string): string[] {
  const path = join(repositoryRoot, directory);
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) => {
    const child = `${directory}/${entry.name}`;
    if (entry.isDirectory()) return SKIPPED_DIRECTORIES.has(entry.name) ? [] : limitedSourceFiles(child);
    if (!SOURCE_FILE.test(entry.name) || TEST_FILE.test(entry.name)) return [];
    return LONG_FILES_ALLOWED.some(({ pattern }) => pattern.test(child)) ? [] : [child];
  });
}

function lineCount(file: string): number {
  const text = readFileSync(join(repositoryRoot, file), 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('source files', () => {
  const files = SOURCE_ROOTS.flatMap(limitedSourceFiles);

  it(`stay under ${MAX_SOURCE_LINES} lines`, () => {
    expect(files, 'no source files found').toContain('packages/server/src/app.ts');
    const long = files
      .map((file) => ({ file, lines: lineCount(file) }))
      .filter(({ lines }) => lines > MAX_SOURCE_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(long, `split these by responsibility (at most ${MAX_SOURCE_LINES} lines)`).toEqual([]);
  });

  it('of the server re-type nothing through `as unknown as`', () => {
    const casts = files
      .filter((file) => file.startsWith('packages/server/src/'))
      .filter((file) => readFileSync(join(repositoryRoot, file), 'utf8').includes('as unknown as'));
    expect(casts, 'a cast through unknown re-types a value the type checker cannot follow').toEqual([]);
  });
});
