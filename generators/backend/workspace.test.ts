import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backendNames } from './backend-names.js';
import { KNOWN_BACKENDS_FILE, readKnownBackends } from './known-backends-file.js';
import { registerBackend } from './registration.js';
import {
  backendConflict,
  catalogDependencies,
  readBackendPackages,
  readCatalogNames,
  workspacePeerRange,
} from './workspace.js';

const repositoryRoot = resolve(import.meta.dirname, '../..');

const temporaryDirectories: string[] = [];
afterEach(async () => {
  await Promise.all(temporaryDirectories.splice(0).map((path) => rm(path, { recursive: true, force: true })));
});

describe('the workspace as the generator reads it', () => {
  it("takes tool versions from pnpm-workspace.yaml's catalog", () => {
    const catalog = readCatalogNames(repositoryRoot);

    expect(catalog.has('typescript')).toBe(true);
    expect(catalog.has('@types/node')).toBe(true);
    expect(catalogDependencies(repositoryRoot, ['typescript', 'vitest'])).toEqual({
      typescript: 'catalog:',
      vitest: 'catalog:',
    });
  });

  it('refuses a dependency the catalog lacks', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dstack-generator-'));
    temporaryDirectories.push(root);
    await writeFile(
      join(root, 'pnpm-workspace.yaml'),
      'packages:\n  - packages/*\ncatalog:\n  "@types/node": 20.0.0\n',
    );

    expect(() => catalogDependencies(root, ['@types/node', 'left-pad'])).toThrow(
      /catalog lacks left-pad; add it there first/,
    );
  });
});

/**
 * A workspace with what the generator reads and edits: the real map of backend packages (which
 * lists aws, gcp, … with no package here), packages/backend-local, and the server's and CLI's
 * manifests and the root tsconfig with nothing registered.
 */
async function scratchWorkspace(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'dstack-generator-'));
  temporaryDirectories.push(root);
  const write = async (file: string, content: unknown) => {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await writeFile(
      join(root, file),
      typeof content === 'string' ? content : `${JSON.stringify(content, null, 2)}\n`,
    );
  };
  await write('pnpm-workspace.yaml', 'packages:\n  - packages/*\ncatalog:\n  vitest: 3.0.0\n');
  await write('tsconfig.json', { files: [], references: [{ path: 'packages/backend-local' }] });
  await write('packages/catalog/package.json', { name: '@dstack/catalog' });
  await mkdir(dirname(join(root, KNOWN_BACKENDS_FILE)), { recursive: true });
  await copyFile(join(repositoryRoot, KNOWN_BACKENDS_FILE), join(root, KNOWN_BACKENDS_FILE));
  await write('packages/backend-local/package.json', { name: '@dstack/backend-local' });
  await write('packages/server/package.json', { name: '@dstack/server' });
  await write('packages/cli/package.json', { name: '@dstack/cli' });
  return root;
}

describe('which names the generator takes', () => {
  it('takes a type the map lists whose package does not exist yet', async () => {
    const root = await scratchWorkspace();

    expect(readBackendPackages(root).get('aws')).toBe('@dstack/backend-aws');
    expect(backendConflict(root, backendNames('AWS'))).toBeUndefined();
    expect(backendConflict(root, backendNames('VastAi'))).toBeUndefined();
  });

  it('refuses a listed type whose package exists, even in another directory', async () => {
    const root = await scratchWorkspace();
    await mkdir(join(root, 'packages/aws-backend'), { recursive: true });
    await writeFile(join(root, 'packages/aws-backend/package.json'), '{"name": "@dstack/backend-aws"}');

    expect(backendConflict(root, backendNames('Local'))).toBe('packages/backend-local already exists');
    expect(backendConflict(root, backendNames('AWS'))).toBe(
      '@dstack/backend-aws already exists in packages/aws-backend',
    );
  });

  it('refuses a listed type whose package the map names differently, once that package exists', async () => {
    const root = await scratchWorkspace();
    const map = join(root, KNOWN_BACKENDS_FILE);
    await writeFile(
      map,
      (await readFile(map, 'utf8')).replace(
        "packageName: '@dstack/backend-local'",
        "packageName: '@acme/local'",
      ),
    );
    await mkdir(join(root, 'packages/acme-local'), { recursive: true });
    await writeFile(join(root, 'packages/acme-local/package.json'), '{"name": "@acme/local"}');
    await rm(join(root, 'packages/backend-local'), { recursive: true });

    expect(backendConflict(root, backendNames('Local'))).toBe(
      'backend type "local" is already taken by @acme/local (packages/acme-local)',
    );
  });

  it('refuses a package the map lists under another type', async () => {
    const root = await scratchWorkspace();

    // dstack's type is `lambda` (gpuhunt's `lambdalabs`), and @dstack/backend-lambda is its package.
    expect(backendConflict(root, backendNames('Lambda'))).toBeUndefined();
    expect(
      backendConflict(root, { ...backendNames('Lambda Labs'), packageName: '@dstack/backend-lambda' }),
    ).toBe(`@dstack/backend-lambda is already listed as type "lambda" in ${KNOWN_BACKENDS_FILE}`);
  });
});

describe('registerBackend', () => {
  it('keeps the entry of a listed type, updating its catalog kind, and registers the package', async () => {
    const root = await scratchWorkspace();
    const before = readKnownBackends(root).map(({ type }) => type);

    const changed = registerBackend(root, backendNames('AWS'), { catalog: 'online' });

    expect(changed).toEqual([
      KNOWN_BACKENDS_FILE,
      'packages/server/package.json',
      'packages/cli/package.json',
      'tsconfig.json',
    ]);
    const after = readKnownBackends(root);
    expect(after.map(({ type }) => type)).toEqual(before);
    expect(after.find(({ type }) => type === 'aws')).toMatchObject({
      packageName: '@dstack/backend-aws',
      catalog: 'online',
    });
    expect(registerBackend(root, backendNames('AWS'), { catalog: 'online' })).toEqual([]);
  });

  it('adds a new type to the map, after the others', async () => {
    const root = await scratchWorkspace();

    registerBackend(root, backendNames('Example Cloud'), { catalog: 'offline' });

    expect(readKnownBackends(root).at(-1)).toMatchObject({
      type: 'examplecloud',
      packageName: '@dstack/backend-example-cloud',
      catalog: 'offline',
    });
    expect(readBackendPackages(root).get('aws')).toBe('@dstack/backend-aws');
  });
});

describe('workspacePeerRange', () => {
  it('accepts every later version of the same major, so a minor of core forces no major elsewhere', () => {
    expect(workspacePeerRange('0.1.0')).toBe('workspace:>=0.1.0 <1.0.0');
    expect(workspacePeerRange('2.3.4')).toBe('workspace:>=2.3.4 <3.0.0');
    expect(() => workspacePeerRange('next')).toThrow(/Not a semver version/);
  });
});
