/**
 * Runs `pnpm plop backend` non-interactively in a scratch copy of the
 * repository (tracked and untracked-not-ignored files), for both compute kinds
 * and both catalog modes, then builds, lints and tests what it generated and
 * asks the scratch copy's server which backend types it can load. One of the two
 * types is listed in the map of backend packages beforehand (as `aws` is before
 * anyone generates it): the generator must take it and keep the one entry.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  copyFile,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPackedPackage, packPackage } from '../../scripts/lib/release-check.mjs';
import { SKIP_DOCS_VARIABLE } from './backend-generator.js';
import { backendNames } from './backend-names.js';
import { KNOWN_BACKENDS_FILE, readKnownBackends, withKnownBackend } from './known-backends-file.js';
import { registerBackend } from './registration.js';

const execFileAsync = promisify(execFile);
const repositoryRoot = resolve(import.meta.dirname, '../..');

// Names no one generates for real: the scratch copy includes the work tree's own
// generated packages (e.g. the `Example` of the issue's walk-through).
const GENERATED = [
  { name: 'Scratch Vm', kind: 'vm', catalog: 'online' },
  { name: 'Acme Gpu', kind: 'container', catalog: 'offline' },
] as const;
const generated = GENERATED.map((options) => ({ ...options, names: backendNames(options.name) }));
/** Listed in the scratch copy's map before the generator runs, with the other catalog kind. */
const listedBeforehand = generated[1];

interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Runs a command in `cwd`; a failure carries the command's output. */
async function run(
  cwd: string,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CommandResult> {
  try {
    return await execFileAsync(command, args, {
      cwd,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, ...env },
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`, { cause: error });
  }
}

/** Copies the repository's tracked and untracked-but-not-ignored files (no node_modules, no dist). */
async function copyRepository(destination: string): Promise<void> {
  const { stdout } = await run(repositoryRoot, 'git', [
    'ls-files',
    '-z',
    '--cached',
    '--others',
    '--exclude-standard',
  ]);
  const files = [...new Set(stdout.split('\0').filter((file) => file !== ''))];
  for (const file of files) {
    // Tracked files deleted in the working tree are listed too; the copy mirrors the working tree.
    const stats = await stat(join(repositoryRoot, file)).catch(() => null);
    if (!stats?.isFile()) continue;
    await mkdir(dirname(join(destination, file)), { recursive: true });
    await copyFile(join(repositoryRoot, file), join(destination, file));
    // Times kept: a source newer than the build copied beside it would have tsc --build compile its package again.
    await utimes(join(destination, file), stats.atime, stats.mtime);
  }
}

/**
 * Copies the packages' `dist` (with tsc's build info, times kept) as the repository's build left
 * them: the generator's `pnpm run docs` then builds incrementally, as in a developer's clone where
 * the workspace was built before, instead of compiling every package from nothing.
 */
async function copyBuiltPackages(destination: string): Promise<void> {
  for (const entry of await readdir(join(repositoryRoot, 'packages'), { withFileTypes: true })) {
    const dist = join(repositoryRoot, 'packages', entry.name, 'dist');
    if (!entry.isDirectory() || !existsSync(dist)) continue;
    await cp(dist, join(destination, 'packages', entry.name, 'dist'), {
      recursive: true,
      preserveTimestamps: true,
      verbatimSymlinks: true,
    });
  }
}

/**
 * The set-up generates two backends and compiles the workspace once (about a minute on a quiet
 * 2-core machine); the limit only catches a hang, with room for a machine busy with the rest of the suite.
 */
const SETUP_TIMEOUT_MS = 600_000;

/** How long each setup step took, printed after the suite: the one to look at when the file grows. */
const timings: string[] = [];
async function timed<T>(step: string, action: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await action();
  } finally {
    timings.push(`${step}: ${((performance.now() - start) / 1000).toFixed(1)} s`);
  }
}

interface VitestAssertion {
  title: string;
  status: string;
}
interface VitestReport {
  testResults: { name: string; assertionResults: VitestAssertion[] }[];
}

describe('pnpm plop backend', () => {
  let scratch: string;
  let vitestReport: VitestReport;
  let mapBeforeGenerating: string[];
  /** What each `pnpm plop backend` printed, in the order of GENERATED. */
  const generatorOutputs: string[] = [];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'dstack-plop-backend-'));
    await timed('copy', () => copyRepository(scratch));
    await timed('copy the built packages', () => copyBuiltPackages(scratch));
    // Links workspace packages from pnpm's store; better-sqlite3 comes from the side-effects cache.
    await timed('pnpm install --offline', () => run(scratch, 'pnpm', ['install', '--offline']));
    const mapFile = join(scratch, KNOWN_BACKENDS_FILE);
    await writeFile(
      mapFile,
      withKnownBackend(await readFile(mapFile, 'utf8'), {
        type: listedBeforehand.names.type,
        packageName: listedBeforehand.names.packageName,
        catalog: listedBeforehand.catalog === 'offline' ? 'online' : 'offline',
      }),
    );
    mapBeforeGenerating = readKnownBackends(scratch).map(({ type }) => type);
    for (const [index, { name, kind, catalog }] of GENERATED.entries()) {
      const args = ['plop', 'backend', '--', '--name', name, '--kind', kind, '--catalog', catalog];
      // The docs (a build of the workspace) are regenerated once, by the last generation, with both.
      const skipsDocs = index < GENERATED.length - 1;
      const { stdout } = await timed(
        `pnpm ${args.join(' ')}${skipsDocs ? ` (${SKIP_DOCS_VARIABLE}=true)` : ''}`,
        () => run(scratch, 'pnpm', args, skipsDocs ? { [SKIP_DOCS_VARIABLE]: 'true' } : {}),
      );
      generatorOutputs.push(stdout);
    }
    const packageDirectories = generated.map(({ names }) => names.directory);
    await timed('build', () =>
      run(scratch, 'pnpm', ['exec', 'tsc', '--build', ...packageDirectories, 'packages/server']),
    );
    const reportFile = join(scratch, 'vitest-report.json');
    await timed('test', () =>
      run(scratch, 'pnpm', [
        'exec',
        'vitest',
        'run',
        ...generated.flatMap(({ names }) => ['--project', names.packageName]),
        '--reporter=json',
        `--outputFile=${reportFile}`,
      ]),
    );
    vitestReport = JSON.parse(await readFile(reportFile, 'utf8')) as VitestReport;
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    console.info(`pnpm plop backend test, setup steps:\n  ${timings.join('\n  ')}`);
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  /** The statuses of a generated test file's tests, by title. */
  function statuses(fileSuffix: string): VitestAssertion[] {
    const file = vitestReport.testResults.find((result) => result.name.endsWith(fileSuffix));
    if (!file) throw new Error(`vitest ran no ${fileSuffix}`);
    return file.assertionResults;
  }

  it.each(generated)(
    'generates $names.packageName ($kind, $catalog catalog) that builds',
    async ({ names }) => {
      const manifest = JSON.parse(await readFile(join(scratch, names.directory, 'package.json'), 'utf8'));
      const distributed = await import(join(scratch, names.directory, 'dist/index.js'));

      expect(manifest.peerDependencies).toEqual({
        '@dstack/core': 'workspace:>=0.1.0 <1.0.0',
        '@dstack/catalog': 'workspace:>=0.1.0 <1.0.0',
      });
      expect(Object.values(manifest.devDependencies)).not.toContainEqual(expect.stringMatching(/^\^?\d/));
      expect(distributed.default).toMatchObject({ $$type: '@dstack/BackendPlugin', type: names.type });
      expect(distributed.VERSION).toBe(manifest.version);
    },
  );

  it.each(generated)('generates $names.packageName that packs for publishing', async ({ names }) => {
    const destination = await mkdtemp(join(tmpdir(), 'dstack-plop-pack-'));
    try {
      const packed = await packPackage(join(scratch, names.directory), destination);
      expect(checkPackedPackage(packed)).toEqual([]);
    } finally {
      await rm(destination, { recursive: true, force: true });
    }
  });

  it('generates code that passes biome', async () => {
    await run(scratch, 'pnpm', [
      'exec',
      'biome',
      'check',
      ...generated.map(({ names }) => names.directory),
      KNOWN_BACKENDS_FILE,
      'packages/server/src/backends',
      'packages/server/package.json',
      'packages/cli/package.json',
      'tsconfig.json',
    ]);
  });

  it.each(generated)(
    'declares $kind capabilities and a $catalog catalog provider',
    async ({ names, kind, catalog }) => {
      const plugin = (await import(join(scratch, names.directory, 'dist/index.js'))).default;

      expect(plugin.computeKind).toBe(kind);
      expect(plugin.capabilities).toEqual(
        kind === 'vm' ? ['create-instance', 'privileged', 'instance-volumes'] : [],
      );
      expect(plugin.catalogProvider).toMatchObject({ kind: catalog, name: names.type });
      expect(plugin.provisioningTimeoutSeconds).toBe(600);
    },
  );

  it.each(generated)("passes $names.packageName's config and version tests", ({ names }) => {
    const configTests = statuses(`${names.kebab}-config.test.ts`);

    expect(configTests.length).toBeGreaterThanOrEqual(5);
    expect(configTests.filter((test) => test.status !== 'passed')).toEqual([]);
    expect(statuses(`${names.directory}/src/version.test.ts`).map((test) => test.status)).toEqual(['passed']);
  });

  it.each(generated)("reports $names.packageName's unimplemented conformance checks as todo", ({ names }) => {
    const conformance = statuses(`${names.kebab}-conformance.test.ts`);

    expect(conformance.filter((test) => test.status === 'failed')).toEqual([]);
    expect(conformance.some((test) => test.status === 'todo')).toBe(true);
  });

  it('registers every generated type with the server', async () => {
    const { stdout } = await run(join(scratch, 'packages/server'), 'node', [
      '--input-type=module',
      '-e',
      "const { listAvailableBackendTypes } = await import('./dist/backends/discovery.js'); console.log(JSON.stringify(await listAvailableBackendTypes()));",
    ]);

    expect(JSON.parse(stdout)).toEqual(expect.arrayContaining(generated.map(({ names }) => names.type)));
  });

  it('regenerates the docs with the new backends when the docs script exists', async (context) => {
    if (!existsSync(join(scratch, 'scripts/generate-docs.mjs')))
      context.skip('scripts/generate-docs.mjs is absent');
    const backends = await readFile(join(scratch, 'docs/backends.md'), 'utf8');
    const serverConfig = await readFile(join(scratch, 'docs/server-config.md'), 'utf8');

    for (const { names } of generated) {
      expect(backends).toContain(`\`${names.packageName}\``);
      expect(serverConfig).toContain(`### ${names.type}`);
    }
    // The first generation left them to the last one, as DSTACK_PLOP_SKIP_DOCS=true asks.
    expect(generatorOutputs[0]).toContain(`skipped: ${SKIP_DOCS_VARIABLE}=true`);
    expect(generatorOutputs[1]).toContain('pnpm run docs');
  });

  it('keeps one entry per type in the map of backend packages: the listed one updated, the new one added', () => {
    const map = readKnownBackends(scratch);

    expect(map.map(({ type }) => type)).toEqual([
      ...mapBeforeGenerating,
      ...generated.map(({ names }) => names.type).filter((type) => !mapBeforeGenerating.includes(type)),
    ]);
    expect(mapBeforeGenerating).toContain(listedBeforehand.names.type);
    for (const { names, catalog } of generated) {
      expect(map.find(({ type }) => type === names.type)).toMatchObject({
        packageName: names.packageName,
        catalog,
      });
    }
  });

  it("gives the catalog's collect the offline ones, from the same map as the server", async () => {
    const { stdout } = await run(join(scratch, 'packages/server'), 'node', [
      '--input-type=module',
      '-e',
      [
        "const catalog = await import('@dstack/catalog');",
        "const discovery = await import('./dist/backends/discovery.js');",
        'console.log(JSON.stringify({ same: catalog.BACKEND_PACKAGES === discovery.BACKEND_PACKAGES, collect: catalog.OFFLINE_CATALOG_PACKAGES }));',
      ].join(' '),
    ]);
    const { same, collect } = JSON.parse(stdout) as { same: boolean; collect: Record<string, string> };

    expect(same).toBe(true);
    for (const { names, catalog } of generated) {
      expect(collect[names.type]).toBe(catalog === 'offline' ? names.packageName : undefined);
    }
  });

  it('lists the new packages as optional peers of the server and CLI', async () => {
    const server = JSON.parse(await readFile(join(scratch, 'packages/server/package.json'), 'utf8'));
    const cli = JSON.parse(await readFile(join(scratch, 'packages/cli/package.json'), 'utf8'));

    for (const { names } of generated) {
      expect(server.devDependencies[names.packageName]).toBe('workspace:^');
      for (const manifest of [server, cli]) {
        expect(manifest.peerDependencies[names.packageName]).toBe('workspace:>=0.0.0 <1.0.0');
        expect(manifest.peerDependenciesMeta[names.packageName]).toEqual({ optional: true });
      }
    }
  });

  it('leaves the registration unchanged when applied again, and refuses an existing backend', async () => {
    expect(registerBackend(scratch, generated[0].names, { catalog: generated[0].catalog })).toEqual([]);

    const again = run(scratch, 'pnpm', [
      'plop',
      'backend',
      '--',
      '--name',
      generated[0].name,
      '--kind',
      'vm',
      '--catalog',
      'online',
    ]);

    await expect(again).rejects.toThrow(`${generated[0].names.directory} already exists`);
  });
});
