import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backendNames } from './backend-names.js';
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

  it('reads the discovery map and refuses taken types and existing packages', () => {
    expect(readBackendPackages(repositoryRoot).get('local')).toBe('@dstack/backend-local');
    expect(backendConflict(repositoryRoot, backendNames('Local'))).toBe(
      'packages/backend-local already exists',
    );
    expect(backendConflict(repositoryRoot, backendNames('Aws'))).toBe(
      'backend type "aws" is already taken by @dstack/backend-aws',
    );
    expect(backendConflict(repositoryRoot, backendNames('VastAi'))).toBe(
      'backend type "vastai" is already taken by @dstack/backend-vastai',
    );
  });
});

describe('workspacePeerRange', () => {
  it('accepts every later version of the same major, so a minor of core forces no major elsewhere', () => {
    expect(workspacePeerRange('0.1.0')).toBe('workspace:>=0.1.0 <1.0.0');
    expect(workspacePeerRange('2.3.4')).toBe('workspace:>=2.3.4 <3.0.0');
    expect(() => workspacePeerRange('next')).toThrow(/Not a semver version/);
  });
});
