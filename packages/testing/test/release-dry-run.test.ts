/**
 * What `pnpm release:dry-run` checks, as a test: in a scratch copy of the
 * workspace, `changeset version` then `pnpm pack` of every public package;
 * each tarball holds only package.json, dist (no tests, fixtures or build
 * state), README and CHANGELOG, and its manifest has real version ranges
 * where the workspace says `workspace:` or `catalog:`.
 */
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkPackedPackage,
  checkVersionBumps,
  createScratchCopy,
  findUnbuiltPackages,
  type PackedPackage,
  packAndCheckPublicPackages,
  readRequestedBumps,
  type VersionBump,
  versionPackages,
  whyNotPublishable,
} from '../../../scripts/lib/release-check.mjs';
import { readTarball } from '../../../scripts/lib/tarball.mjs';
import {
  listPublicPackages,
  listWorkspacePackages,
  readCatalog,
  type WorkspacePackage,
} from '../../../scripts/lib/workspace-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies'] as const;

/** The one public package that is not a library: the runner's portable runtime, as files. */
const RUNTIME_PACKAGE = '@dstack/runner-runtime-linux-x64';
const WEB_PACKAGE = '@dstack/web';

function isLibrary(packed: PackedPackage): boolean {
  return packed.manifest.exports !== undefined;
}

describe('release dry run on the workspace', () => {
  let scratch = '';
  let bumps: VersionBump[] = [];
  let results: { packed: PackedPackage; problems: string[] }[] = [];
  let versionedPackages: WorkspacePackage[] = [];
  let workTreeManifests = '';

  beforeAll(async () => {
    expect(findUnbuiltPackages(root), 'packages without dist/: run pnpm build first').toEqual([]);
    workTreeManifests = listWorkspacePackages(root)
      .map((pkg) => readFileSync(join(pkg.dir, 'package.json'), 'utf8'))
      .join('\n');
    scratch = await createScratchCopy(root);
    bumps = await versionPackages(root, scratch);
    versionedPackages = listPublicPackages(scratch);
    results = await packAndCheckPublicPackages(scratch, join(scratch, '.tarballs'));
  }, 120_000);

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('versions in the scratch copy and leaves the work tree alone', () => {
    const now = listWorkspacePackages(root)
      .map((pkg) => readFileSync(join(pkg.dir, 'package.json'), 'utf8'))
      .join('\n');
    expect(now).toBe(workTreeManifests);
    for (const bump of bumps) {
      const versioned = versionedPackages.find((pkg) => pkg.name === bump.name);
      expect(versioned?.manifest.version).toBe(bump.to);
    }
    const privateVersions = (dir: string) =>
      listWorkspacePackages(dir)
        .filter((pkg) => pkg.isPrivate)
        .map((pkg) => `${pkg.name}@${pkg.manifest.version}`);
    expect(privateVersions(scratch)).toEqual(privateVersions(root));
  });

  it('releases core, the runner, its runtime and the shim at one version', () => {
    const agents = ['@dstack/core', '@dstack/runner', '@dstack/runner-runtime-linux-x64', '@dstack/shim'];
    const versions = versionedPackages
      .filter((pkg) => agents.includes(pkg.name))
      .map((pkg) => pkg.manifest.version);
    expect(versions).toHaveLength(agents.length);
    expect(new Set(versions).size).toBe(1);
  });

  it('packs every public package', () => {
    expect(results.map(({ packed }) => packed.name).sort()).toEqual(
      listPublicPackages(root)
        .map((pkg) => pkg.name)
        .sort(),
    );
    expect(results.length).toBeGreaterThan(0);
  });

  it('publishes only package.json, dist, README and CHANGELOG', () => {
    for (const { packed, problems } of results) {
      expect(problems, packed.name).toEqual([]);
      expect(packed.files, packed.name).toEqual(
        expect.arrayContaining([
          'package.json',
          'README.md',
          'CHANGELOG.md',
          ...(isLibrary(packed) ? ['dist/index.js', 'dist/index.d.ts'] : []),
        ]),
      );
      const unpublishable = packed.files.filter((file) => whyNotPublishable(file) !== null);
      expect(unpublishable, packed.name).toEqual([]);
      expect(
        packed.files.filter((file) =>
          /\.(test|spec)[.-]|__fixtures__|(^|\/)testing\/|tsbuildinfo/.test(file),
        ),
        packed.name,
      ).toEqual([]);
    }
  });

  it('exports no test tooling: the instant backend and test app live in @dstack/testing and test helpers', () => {
    const server = results.find(({ packed }) => packed.name === '@dstack/server')?.packed;
    expect(server).toBeDefined();
    const entryPoints = readTarball(server?.tarball ?? '').filter((entry) =>
      ['dist/index.js', 'dist/index.d.ts'].includes(entry.path),
    );
    expect(entryPoints.map((entry) => entry.path).sort()).toEqual(['dist/index.d.ts', 'dist/index.js']);
    for (const entry of entryPoints) {
      expect(entry.content.toString('utf8'), entry.path).not.toMatch(/testing\/|InstantBackend/);
    }
  });

  it('rewrites workspace: and catalog: specifiers to version ranges', () => {
    const catalog = readCatalog(root);
    const versions = new Map(versionedPackages.map((pkg) => [pkg.name, pkg.manifest.version]));
    let checked = 0;
    for (const { packed } of results) {
      const source = versionedPackages.find((pkg) => pkg.name === packed.name);
      expect(source, packed.name).toBeDefined();
      for (const field of DEPENDENCY_FIELDS) {
        const declared = source?.manifest[field] ?? {};
        const published = (packed.manifest[field] ?? {}) as Record<string, string>;
        for (const [dependency, specifier] of Object.entries(declared)) {
          const expected = specifier.startsWith('workspace:')
            ? specifier.replace(
                /^workspace:(\^|~)?$/,
                (_, prefix = '') => `${prefix}${versions.get(dependency)}`,
              )
            : specifier === 'catalog:'
              ? catalog.get(dependency)
              : specifier;
          expect(published[dependency], `${packed.name} ${field}.${dependency}`).toBe(
            expected?.replace(/^workspace:/, ''),
          );
          checked += 1;
        }
      }
      expect(JSON.stringify(packed.manifest)).not.toMatch(/"(workspace|catalog):/);
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('publishes exports that point only at dist', () => {
    // Every package is a library but the runner's runtime and the web console, which publish files, not modules.
    expect(
      results
        .filter(({ packed }) => !isLibrary(packed))
        .map(({ packed }) => packed.name)
        .sort(),
    ).toEqual([RUNTIME_PACKAGE, WEB_PACKAGE]);
    const web = results.find(({ packed }) => packed.name === WEB_PACKAGE)?.packed;
    expect(web?.files).toEqual(expect.arrayContaining(['dist/index.html']));
    const runtime = results.find(({ packed }) => packed.name === RUNTIME_PACKAGE)?.packed;
    expect(runtime?.files).toEqual(
      expect.arrayContaining(['dist/dstack-runtime/bin/node', 'dist/dstack-runtime/runner.mjs']),
    );
    for (const { packed } of results.filter((result) => isLibrary(result.packed))) {
      const exports = packed.manifest.exports as Record<string, unknown>;
      expect(exports['.'], packed.name).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
      expect(exports['./package.json'], packed.name).toBe('./package.json');
      // Subpaths (core's `./agent-protocol`) point at dist too, at files the tarball holds.
      for (const [subpath, target] of Object.entries(exports)) {
        if (subpath === './package.json') continue;
        const { types, import: entry } = target as { types: string; import: string };
        expect(Object.keys(target as object), `${packed.name} ${subpath}`).toEqual(['types', 'import']);
        expect(packed.files, `${packed.name} ${subpath}`).toEqual(
          expect.arrayContaining([types, entry].map((path) => path.replace(/^\.\//, ''))),
        );
        expect(entry, `${packed.name} ${subpath}`).toMatch(/^\.\/dist\/.+\.js$/);
      }
      for (const bin of Object.values((packed.manifest.bin ?? {}) as Record<string, string>)) {
        expect(packed.files, `${packed.name} bin`).toContain(bin.replace(/^\.\//, ''));
      }
    }
  });

  it('makes no 0.x package 1.0.0 unless a changeset asks for a major', () => {
    expect(checkVersionBumps(bumps, readRequestedBumps(root), versionedPackages)).toEqual([]);
  });
});

describe('changesets configuration', () => {
  it('versions packages independently, publicly, and leaves private tooling alone', () => {
    const config = JSON.parse(readFileSync(join(root, '.changeset/config.json'), 'utf8'));
    expect(config).toMatchObject({
      // But for core and the agents: the default download URL of the agent runtime (core's
      // agentRuntimeTarballUrl, runnerRuntimeTarballUrl) carries core's version.
      fixed: [['@dstack/core', '@dstack/runner', '@dstack/runner-runtime-linux-x64', '@dstack/shim']],
      linked: [],
      access: 'public',
      updateInternalDependencies: 'patch',
      privatePackages: { version: false, tag: false },
      ___experimentalUnsafeOptions_WILL_CHANGE_IN_PATCH: { onlyUpdatePeerDependentsWhenOutOfRange: true },
    });
  });
});

describe('release checks', () => {
  const packed = (files: string[], manifest: Record<string, unknown> = {}): PackedPackage => ({
    name: '@dstack/example',
    version: '1.0.0',
    tarball: '/tmp/example.tgz',
    files,
    manifest: { name: '@dstack/example', version: '1.0.0', ...manifest },
  });

  it('accepts package.json, dist, README, CHANGELOG, LICENSE and runtime assets', () => {
    for (const file of [
      'package.json',
      'README.md',
      'CHANGELOG.md',
      'LICENSE',
      'dist/index.js',
      'dist/bin/dstack.js',
      'dist/backends/fake-backend.js',
      'assets/snapshot/aws.csv',
    ]) {
      expect(whyNotPublishable(file), file).toBeNull();
    }
  });

  it('rejects tests, fixtures, build state and sources', () => {
    for (const file of [
      'dist/catalog.test.js',
      'dist/x.test.d.ts',
      'dist/testing/shim-test.test.helpers.js',
      'dist/testing/instant-backend.js',
      'dist/http/upgrade-request.test-helper.js',
      'dist/__fixtures__/local-instances.js',
      'dist/.tsbuildinfo',
      'tsconfig.tsbuildinfo',
      'src/index.ts',
      'vitest.config.ts',
      'assets/.gitattributes',
    ]) {
      expect(whyNotPublishable(file), file).not.toBeNull();
    }
  });

  it('reports a missing CHANGELOG, leftover specifiers, a source export and a missing entry point', () => {
    const problems = checkPackedPackage(
      packed(['package.json', 'README.md', 'dist/index.js', 'dist/index.test.js'], {
        main: './dist/index.js',
        bin: { example: './dist/bin/example.js' },
        exports: { '.': { source: './src/index.ts', import: './dist/index.js' } },
        dependencies: { '@dstack/core': 'workspace:^', zod: 'catalog:' },
      }),
    );
    expect(problems).toEqual([
      expect.stringContaining('publishes dist/index.test.js: a test file'),
      'lacks CHANGELOG.md',
      expect.stringContaining('dependencies.@dstack/core is still "workspace:^"'),
      expect.stringContaining('dependencies.zod is still "catalog:"'),
      expect.stringContaining('exports...source points at sources'),
      'package.json points at dist/bin/example.js, which is not in the tarball',
      'package.json points at src/index.ts, which is not in the tarball',
    ]);
  });

  it('flags a 0.x package pushed to 1.0.0 by a peer range, not one a changeset asks for', () => {
    const backend = {
      name: '@dstack/backend-x',
      dir: '/x',
      relativeDir: 'packages/backend-x',
      isPrivate: false,
      manifest: {
        name: '@dstack/backend-x',
        version: '0.1.0',
        peerDependencies: { '@dstack/core': 'workspace:^' },
      },
    };
    const bumps: VersionBump[] = [
      { name: '@dstack/core', from: '0.1.0', to: '0.2.0', type: 'minor', requested: true },
      { name: '@dstack/backend-x', from: '0.1.0', to: '1.0.0', type: 'major', requested: false },
    ];
    const problems = checkVersionBumps(bumps, new Map([['@dstack/core', 'minor']]), [backend]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('@dstack/backend-x would go from 0.1.0 to 1.0.0');
    expect(problems[0]).toContain('@dstack/core "workspace:^"');
    expect(
      checkVersionBumps(
        bumps,
        new Map([
          ['@dstack/core', 'minor'],
          ['@dstack/backend-x', 'major'],
        ]),
        [backend],
      ),
    ).toEqual([]);
  });
});
