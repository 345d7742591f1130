import { lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allowTraversal, chownTree } from './hand-over-directory.js';

let directory: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-hand-over-'));
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe.skipIf(process.getuid?.() !== 0)('chownTree (as root)', () => {
  it('hands over every entry but never what a symbolic link points to', () => {
    const tree = join(directory, 'tree');
    const outside = join(directory, 'outside');
    mkdirSync(join(tree, 'a', 'b'), { recursive: true });
    writeFileSync(join(tree, 'a', 'b', 'file.txt'), 'x');
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'y');
    symlinkSync(outside, join(tree, 'a', 'link'));
    return chownTree(tree, { uid: 65534, gid: 65534 }).then(() => {
      for (const path of ['', 'a', 'a/b', 'a/b/file.txt']) {
        expect(statSync(join(tree, path))).toMatchObject({ uid: 65534, gid: 65534 });
      }
      expect(lstatSync(join(tree, 'a', 'link')).uid).toBe(65534);
      expect(statSync(outside).uid).toBe(0);
      expect(statSync(join(outside, 'secret.txt')).uid).toBe(0);
    });
  });
});

describe('allowTraversal', () => {
  it('adds search permission for everyone and keeps the rest of the mode', async () => {
    await allowTraversal(directory);
    expect(statSync(directory).mode & 0o7777).toBe(0o711);
  });
});
