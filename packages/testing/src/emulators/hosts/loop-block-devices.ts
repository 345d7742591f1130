/**
 * Network volumes of an emulated cloud as real block devices: each volume is a sparse backing
 * file on this machine, put on a loop device while it is attached to an instance (the device an
 * emulated host gets with `attachBlockDevice`) and taken off at detach. The file stays, so the
 * data survives detach and attach; deleting the volume deletes it, and `close` frees every loop
 * device and file left. Loop devices need root, as on a cloud's hypervisor.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Whether this process can make loop devices (root, with `losetup`). */
export async function loopDevicesUsable(): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  try {
    await run('losetup', ['--version']);
    return true;
  } catch {
    return false;
  }
}

/** A loop device on this machine: its path and its device numbers (for `mknod` in a host). */
export interface LoopDevice {
  readonly path: string;
  readonly major: number;
  readonly minor: number;
}

export class LoopBackedDisks {
  readonly #directory: Promise<string>;
  readonly #files = new Map<string, string>();
  readonly #loops = new Map<string, LoopDevice>();

  constructor(prefix = 'dstack-emulated-disks-') {
    this.#directory = mkdtemp(join(tmpdir(), prefix));
  }

  /**
   * Makes the volume's sparse backing file of `sizeGiB` (no space is used until written); an
   * existing one keeps its data and only grows.
   */
  async create(id: string, sizeGiB: number): Promise<void> {
    const file = join(await this.#directory, `${id}.img`);
    const handle = await open(file, 'a');
    try {
      if ((await handle.stat()).size < sizeGiB * 1024 ** 3) await handle.truncate(sizeGiB * 1024 ** 3);
    } finally {
      await handle.close();
    }
    this.#files.set(id, file);
  }

  /** Puts the volume on a free loop device (once; a second call answers the same device). */
  async attach(id: string): Promise<LoopDevice> {
    const known = this.#loops.get(id);
    if (known) return known;
    const file = this.#files.get(id);
    if (!file) throw new Error(`no backing file for volume ${id}`);
    const { stdout } = await run('losetup', ['--find', '--show', file]);
    const path = stdout.trim();
    const { rdev } = await stat(path);
    // Linux's dev_t: major in bits 8-19 (and 32+), minor in bits 0-7 and 20-31.
    const loop = { path, major: (rdev >> 8) & 0xfff, minor: (rdev & 0xff) | ((rdev >> 12) & 0xfff00) };
    this.#loops.set(id, loop);
    return loop;
  }

  /** Frees the volume's loop device (the file stays). Idempotent. */
  async detach(id: string): Promise<void> {
    const loop = this.#loops.get(id);
    if (!loop) return;
    this.#loops.delete(id);
    await run('losetup', ['--detach', loop.path]).catch(() => undefined);
  }

  /** Frees the loop device and deletes the backing file. */
  async delete(id: string): Promise<void> {
    await this.detach(id);
    const file = this.#files.get(id);
    this.#files.delete(id);
    if (file) await rm(file, { force: true });
  }

  /** Loop devices in use now, by volume id. */
  attached(): ReadonlyMap<string, LoopDevice> {
    return this.#loops;
  }

  /** Frees every loop device and deletes every file. */
  async close(): Promise<void> {
    for (const id of [...this.#loops.keys()]) await this.detach(id);
    this.#files.clear();
    await rm(await this.#directory, { recursive: true, force: true });
  }
}
