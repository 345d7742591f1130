import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packPackageDirectory } from './served-file.js';

describe('packPackageDirectory', () => {
  let work: string;
  const cacheBefore = process.env.DSTACK_TEST_CACHE;

  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'dstack-pack-cache-'));
    process.env.DSTACK_TEST_CACHE = join(work, 'cache');
  });
  afterEach(() => {
    if (cacheBefore === undefined) delete process.env.DSTACK_TEST_CACHE;
    else process.env.DSTACK_TEST_CACHE = cacheBefore;
    rmSync(work, { recursive: true, force: true });
  });

  it('packs a package once for the machine, and again once what it holds changed', async () => {
    const packageDirectory = join(work, 'package');
    mkdirSync(join(packageDirectory, 'dist'), { recursive: true });
    writeFileSync(
      join(packageDirectory, 'package.json'),
      JSON.stringify({ name: '@dstack/pack-cache-probe', version: '1.0.0', files: ['dist'] }),
    );
    writeFileSync(join(packageDirectory, 'dist', 'index.js'), 'export const version = 1;\n');

    const first = await packPackageDirectory(packageDirectory);
    expect(first.path).toMatch(/dstack-pack-cache-probe-1\.0\.0\.tgz$/);
    await first.remove();
    // Kept: the same tarball, not packed again, and not removed by its user.
    const again = await packPackageDirectory(packageDirectory);
    expect(again.path).toBe(first.path);
    expect(existsSync(first.path)).toBe(true);

    // What it does not pack changes nothing.
    mkdirSync(join(packageDirectory, 'test'));
    writeFileSync(join(packageDirectory, 'test', 'index.test.js'), '');
    expect((await packPackageDirectory(packageDirectory)).path).toBe(first.path);

    writeFileSync(join(packageDirectory, 'dist', 'index.js'), 'export const version = 22;\n');
    const rebuilt = await packPackageDirectory(packageDirectory);
    expect(rebuilt.path).not.toBe(first.path);
    expect(
      readdirSync(join(work, 'cache', 'packed-packages')).filter((entry) => !entry.startsWith('.')),
    ).toHaveLength(2);
  });
});
