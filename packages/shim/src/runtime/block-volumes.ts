/**
 * A cloud's network volume on the host: a block device to find, format on first use and mount,
 * as dstack's shim does. Every VM backend shares this: the attachment's `device_name` is a device
 * path (`/dev/sdf`, GCP's `/dev/disk/by-id/google-<name>`), and the volume's id is searched among
 * the host's devices first, since a Nitro instance shows an EBS volume as an NVMe device whatever
 * name it was attached as, with the volume id (without its dash) as the serial.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What the shim needs of a task's volume. */
export interface BlockVolume {
  name: string;
  volume_id: string;
  device_name?: string | null | undefined;
  /** Format it when it has no file system (a volume dstack created). */
  init_fs: boolean;
}

/** Where udev links the host's disks by their ids; a test gives its own. */
export interface DeviceSearch {
  /** Default `/dev/disk/by-id`. */
  byIdDirectory?: string;
}

/** A volume that cannot be mounted, with the reason. */
export class BlockVolumeError extends Error {
  override readonly name = 'BlockVolumeError';
}

/**
 * The block device of the volume on this host: the disk whose udev id or serial (`lsblk`) is the
 * volume id, with or without its dash (EBS on Nitro: `nvme-Amazon_Elastic_Block_Store_vol0abc…`),
 * else `device_name` when it is a block device. Null when there is none.
 */
export async function findVolumeDevice(
  volume: BlockVolume,
  search: DeviceSearch = {},
): Promise<string | null> {
  const ids = [volume.volume_id, volume.volume_id.replaceAll('-', '')].filter((id) => id !== '');
  const byId = await findInById(ids, search.byIdDirectory ?? '/dev/disk/by-id');
  if (byId !== null) return byId;
  const bySerial = await findBySerial(ids);
  if (bySerial !== null) return bySerial;
  if (volume.device_name) return blockDevice(volume.device_name);
  return null;
}

async function findInById(ids: string[], directory: string): Promise<string | null> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return null;
  }
  for (const name of names.sort()) {
    // Partitions (`…-part1`) are not the volume.
    if (/-part\d+$/.test(name)) continue;
    if (ids.some((id) => hasToken(name, id))) {
      const device = await blockDevice(join(directory, name));
      if (device !== null) return device;
    }
  }
  return null;
}

/** `id` as a whole token of a udev name: `nvme-Amazon_Elastic_Block_Store_vol0abc`, `google-disk-1`. */
function hasToken(name: string, id: string): boolean {
  const at = name.indexOf(id);
  if (at < 0) return false;
  const before = at === 0 ? '' : name[at - 1];
  const after = name[at + id.length] ?? '';
  return (before === '' || before === '_' || before === '-') && after === '';
}

async function findBySerial(ids: string[]): Promise<string | null> {
  let output: string;
  try {
    ({ stdout: output } = await run('lsblk', ['-dnpo', 'NAME,SERIAL']));
  } catch {
    return null;
  }
  for (const line of output.split('\n')) {
    const [name, serial] = line.trim().split(/\s+/);
    if (name && serial && ids.includes(serial)) return blockDevice(name);
  }
  return null;
}

/** The real path of `path` when it is a block device (following udev's symlinks). */
async function blockDevice(path: string): Promise<string | null> {
  try {
    const real = await realpath(path);
    return (await stat(real)).isBlockDevice() ? real : null;
  } catch {
    return null;
  }
}

/** The device's file system type (`blkid`); null when it has none. */
export async function fileSystemOf(device: string): Promise<string | null> {
  try {
    const { stdout } = await run('blkid', ['-o', 'value', '-s', 'TYPE', device]);
    return stdout.trim() === '' ? null : stdout.trim();
  } catch (error) {
    // blkid exits 2 when it finds nothing it knows on the device.
    if ((error as { code?: unknown }).code === 2) return null;
    throw error;
  }
}

/** Whether `path` is a mount point now (`/proc/self/mountinfo`, mount points are field 5). */
export async function isMountPoint(path: string): Promise<boolean> {
  const target = await realpath(path).catch(() => path);
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info.split('\n').some((line) => unescapeMountPath(line.split(' ')[4] ?? '') === target);
}

function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );
}

/**
 * Mounts the volume's device at `mountPoint`, formatting it ext4 first when it has no file
 * system and `init_fs` allows (a volume dstack created; a registered one is never formatted).
 * Returns the device. Throws {@link BlockVolumeError} with the reason.
 */
export async function mountBlockVolume(
  volume: BlockVolume,
  mountPoint: string,
  search: DeviceSearch = {},
): Promise<string> {
  const device = await findVolumeDevice(volume, search);
  if (device === null) {
    throw new BlockVolumeError(
      `no block device of volume ${volume.volume_id} (attached as ${volume.device_name ?? 'no device name'}) on this host`,
    );
  }
  await mkdir(mountPoint, { recursive: true });
  if (await isMountPoint(mountPoint)) {
    // Mounted by an earlier task of this shim that did not get to unmount: the same volume name.
    return device;
  }
  const fileSystem = await fileSystemOf(device);
  if (fileSystem === null) {
    if (!volume.init_fs) {
      throw new BlockVolumeError(
        `volume ${volume.volume_id} on ${device} has no file system, and it is not one dstack created: it is not formatted`,
      );
    }
    await command('mkfs.ext4', ['-q', '-F', device], `cannot format ${device}`);
  }
  await command('mount', [device, mountPoint], `cannot mount ${device} at ${mountPoint}`);
  return device;
}

/** Unmounts `mountPoint` when it is mounted. */
export async function unmountBlockVolume(mountPoint: string): Promise<void> {
  if (!(await isMountPoint(mountPoint))) return;
  await command('umount', [mountPoint], `cannot unmount ${mountPoint}`);
}

async function command(file: string, args: string[], what: string): Promise<void> {
  try {
    await run(file, args);
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new BlockVolumeError(`${what}: ${stderr || (error as Error).message}`);
  }
}
