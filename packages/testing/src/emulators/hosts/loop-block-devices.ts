/**
 * Network disks (a GCP persistent disk, an EBS volume) as real block devices of emulated hosts:
 * the disk's bytes are a sparse file on this machine (the same file for the disk's whole life, so
 * data survives detach and attach), attached to a free loop device of this machine's kernel while
 * the disk is attached to an instance. The host container, which shares the kernel, gets a device
 * node made with `mknod` for that loop device's numbers, under the name the cloud's guest would
 * see (`/dev/sdb`), and the symlinks the guest's udev makes (`/dev/disk/by-id/google-<name>`), so
 * formatting and mounting in the host are real. Needs root on this machine (losetup) and hosts
 * that may make device nodes (CAP_MKNOD, a device cgroup rule that lets them open block devices).
 */
import { execFile } from 'node:child_process';
import { closeSync, openSync, statSync, truncateSync } from 'node:fs';
import { posix } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A disk's bytes on this machine: a sparse file of `sizeGb`; made when missing, never shrunk. */
export function ensureBackingFile(path: string, sizeGb: number): void {
  closeSync(openSync(path, 'a'));
  const size = sizeGb * 1024 ** 3;
  if (statSync(path).size < size) truncateSync(path, size);
}

/** A loop device of this machine attached to a backing file. */
export interface LoopDevice {
  /** `/dev/loopN`. */
  readonly path: string;
  readonly major: number;
  readonly minor: number;
}

/** Attaches `backingFile` to the first free loop device (`losetup -f --show`). */
export async function attachLoopDevice(backingFile: string): Promise<LoopDevice> {
  const { stdout } = await run('losetup', ['--find', '--show', backingFile]);
  const path = stdout.trim();
  const { rdev } = statSync(path);
  // Linux's dev_t: major in bits 8-19 (and 32+), minor in bits 0-7 and 20-31.
  const major = ((rdev >> 8) & 0xfff) | (Math.floor(rdev / 2 ** 32) * 0x1000);
  const minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
  return { path, major, minor };
}

/**
 * Frees the loop device. When something still holds it (a filesystem mounted in a host that was
 * not unmounted), the kernel frees it once the last holder lets go (autoclear), as a host's end does.
 */
export async function detachLoopDevice(device: LoopDevice): Promise<void> {
  try {
    await run('losetup', ['--detach', device.path]);
  } catch (error) {
    // Gone already (freed by autoclear, or by another caller).
    if (/No such device|not a block device|failed to use device/i.test(String(error))) return;
    throw error;
  }
}

/** The loop devices of this machine attached to `backingFile` (normally none or one). */
export async function loopDevicesOf(backingFile: string): Promise<string[]> {
  const { stdout } = await run('losetup', ['--associated', backingFile, '--noheadings', '--output', 'NAME']);
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** Shell lines that make the node and its links in a host (run as root there). */
export function blockDeviceSetupScript(
  devicePath: string,
  major: number,
  minor: number,
  links: readonly string[],
) {
  const lines = [
    `rm -f '${devicePath}'`,
    `mknod '${devicePath}' b ${major} ${minor}`,
    `chmod 660 '${devicePath}'`,
  ];
  for (const link of links) {
    const dir = link.slice(0, link.lastIndexOf('/')) || '/';
    // Relative, as udev makes them (`../../sdb`): readers join the target to the link's directory.
    lines.push(`mkdir -p '${dir}'`, `ln -sfn '${posix.relative(dir, devicePath)}' '${link}'`);
  }
  return lines.join('\n');
}

/** Shell lines that remove the node and its links from a host. */
export function blockDeviceRemovalScript(devicePath: string, links: readonly string[]) {
  return [devicePath, ...links].map((path) => `rm -f '${path}'`).join('\n');
}
