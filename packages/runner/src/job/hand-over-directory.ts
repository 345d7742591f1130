import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProcessIdentity } from './job-user.js';

/**
 * Gives a directory the runner (root) prepared to the job's user: the directory and everything
 * in it, symbolic links themselves rather than their targets (a link in the code must not hand
 * over a file outside it). A file with hard links outside the tree stays as it is: chowning one
 * of its names would hand over the other too (an archive's `pw` linked to `/etc/passwd`).
 */
export async function chownTree(root: string, owner: ProcessIdentity): Promise<void> {
  await lchown(root, owner.uid, owner.gid);
  const linked = new Map<string, { paths: string[]; nlink: number }>();
  // A walk of its own: node 20's recursive readdir descends into symbolic links to directories.
  const pending = [root];
  for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
    for (const entry of await readdir(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) {
        await lchown(path, owner.uid, owner.gid);
        pending.push(path);
        continue;
      }
      const info = await lstat(path);
      if (info.nlink === 1) {
        await lchown(path, owner.uid, owner.gid);
        continue;
      }
      const key = `${info.dev}:${info.ino}`;
      const group = linked.get(key) ?? { paths: [], nlink: info.nlink };
      group.paths.push(path);
      linked.set(key, group);
    }
  }
  // Handed over only when every name of the file was found inside the tree.
  for (const { paths, nlink } of linked.values()) {
    if (paths.length < nlink) continue;
    for (const path of paths) await lchown(path, owner.uid, owner.gid);
  }
}

/**
 * Lets every user pass through `directory` (search permission, not listing), so that a job
 * running as another user reaches its repo and working directory inside the runner's home.
 */
export async function allowTraversal(directory: string): Promise<void> {
  const { mode } = await stat(directory);
  const traversable = mode | 0o111;
  if ((mode & 0o7777) !== (traversable & 0o7777)) await chmod(directory, traversable & 0o7777);
}
