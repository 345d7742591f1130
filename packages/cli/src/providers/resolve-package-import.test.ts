import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PackageResolutionError,
  resolvePackageImport,
  splitPackageSpecifier,
} from './resolve-package-import.js';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dstack-resolve-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Writes `files` (path → content) under `root`. */
function write(files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

function manifest(fields: Record<string, unknown>): string {
  return JSON.stringify({ name: 'x', version: '1.0.0', ...fields });
}

describe('splitPackageSpecifier', () => {
  it.each([
    ['curl-provider', { name: 'curl-provider', subpath: '.' }],
    ['curl-provider/fast', { name: 'curl-provider', subpath: './fast' }],
    ['@acme/providers', { name: '@acme/providers', subpath: '.' }],
    ['@acme/providers/curl/v2', { name: '@acme/providers', subpath: './curl/v2' }],
  ])('%s', (specifier, expected) => {
    expect(splitPackageSpecifier(specifier)).toEqual(expected);
  });

  it.each(['@acme', '.hidden', '@/x', 'has space'])('rejects %s', (specifier) => {
    expect(() => splitPackageSpecifier(specifier)).toThrow(`'${specifier}' is not a valid package name`);
  });
});

describe('resolvePackageImport', () => {
  it('follows import conditions in the order the package lists them', () => {
    write({
      'node_modules/@acme/providers/package.json': manifest({
        exports: {
          '.': {
            types: './index.d.ts',
            require: './index.cjs',
            import: './index.mjs',
            default: './fallback.js',
          },
          './curl': { browser: './curl-browser.js', node: './curl-node.js' },
          './package.json': './package.json',
        },
      }),
    });
    const from = join(root, 'project');
    expect(resolvePackageImport('@acme/providers', from)).toBe(
      join(root, 'node_modules/@acme/providers/index.mjs'),
    );
    expect(resolvePackageImport('@acme/providers/curl', from)).toBe(
      join(root, 'node_modules/@acme/providers/curl-node.js'),
    );
  });

  it('reads a bare exports string, subpath patterns and null exclusions', () => {
    write({
      'node_modules/bare/package.json': manifest({ exports: './main.mjs' }),
      'node_modules/patterned/package.json': manifest({
        exports: { './providers/*': './dist/*.mjs', './providers/internal/*': null },
      }),
    });
    expect(resolvePackageImport('bare', root)).toBe(join(root, 'node_modules/bare/main.mjs'));
    expect(resolvePackageImport('patterned/providers/curl', root)).toBe(
      join(root, 'node_modules/patterned/dist/curl.mjs'),
    );
    expect(() => resolvePackageImport('patterned/providers/internal/secret', root)).toThrow(
      "package 'patterned' does not export './providers/internal/secret' for import",
    );
    expect(() => resolvePackageImport('bare/other.mjs', root)).toThrow(PackageResolutionError);
  });

  it('falls back to main, then index.js, without exports', () => {
    write({
      'node_modules/with-main/package.json': manifest({ main: 'lib/provider' }),
      'node_modules/with-main/lib/provider.js': '',
      'node_modules/plain/package.json': manifest({}),
    });
    expect(resolvePackageImport('with-main', root)).toBe(
      join(root, 'node_modules/with-main/lib/provider.js'),
    );
    expect(resolvePackageImport('plain', root)).toBe(join(root, 'node_modules/plain/index.js'));
    expect(resolvePackageImport('plain/extra.mjs', root)).toBe(join(root, 'node_modules/plain/extra.mjs'));
  });

  it('looks in the nearest node_modules up the parents', () => {
    write({
      'node_modules/shared/package.json': manifest({ exports: './outer.mjs' }),
      'team/node_modules/shared/package.json': manifest({ exports: './inner.mjs' }),
    });
    expect(resolvePackageImport('shared', join(root, 'team/project/configs'))).toBe(
      join(root, 'team/node_modules/shared/inner.mjs'),
    );
    expect(resolvePackageImport('shared', join(root, 'elsewhere'))).toBe(
      join(root, 'node_modules/shared/outer.mjs'),
    );
  });

  it('says where it looked when the package is not installed', () => {
    expect(() => resolvePackageImport('@acme/missing', join(root, 'project'))).toThrow(
      `cannot find package '@acme/missing' in node_modules of ${join(root, 'project')} or its parents`,
    );
  });
});
