import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
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

  it('leaves a file alone that has a hard link outside the tree, and hands over one linked only inside', async () => {
    const tree = join(directory, 'tree');
    const passwd = join(directory, 'passwd');
    mkdirSync(join(tree, 'sub'), { recursive: true });
    writeFileSync(passwd, 'root:x:0:0::/root:/bin/sh\n');
    // What busybox tar makes of an entry `pw` hard-linked to /etc/passwd.
    linkSync(passwd, join(tree, 'pw'));
    writeFileSync(join(tree, 'a.txt'), 'a');
    linkSync(join(tree, 'a.txt'), join(tree, 'sub', 'b.txt'));
    await chownTree(tree, { uid: 65534, gid: 65534 });
    expect(statSync(passwd)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(join(tree, 'a.txt'))).toMatchObject({ uid: 65534, gid: 65534 });
    expect(statSync(join(tree, 'sub'))).toMatchObject({ uid: 65534, gid: 65534 });
  });
});

describe('allowTraversal', () => {
  it('adds search permission for everyone and keeps the rest of the mode', async () => {
    await allowTraversal(directory);
    expect(statSync(directory).mode & 0o7777).toBe(0o711);
  });
});
