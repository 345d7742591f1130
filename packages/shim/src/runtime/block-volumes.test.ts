import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskConfigSchema } from '@dstack/core/agent-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileSystemOf, findVolumeDevice, isMountPoint } from './block-volumes.js';
import { TaskStartError } from './task-runtime.js';
import { prepareVolumes } from './task-volumes.js';

// A real block device: a sparse file on a loop device (needs root, as the shim on a VM has).
const canUseLoopDevices = process.getuid?.() === 0 && hasCommand('losetup');
const directory = mkdtempSync(join(tmpdir(), 'dstack-block-volumes-'));
const byIdDirectory = join(directory, 'by-id');
const volumesDirectory = join(directory, 'volumes');
let loopDevice = '';

function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`]);
    return true;
  } catch {
    return false;
  }
}

beforeAll(() => {
  if (!canUseLoopDevices) return;
  const backing = join(directory, 'volume.img');
  execFileSync('truncate', ['-s', '64M', backing]);
  loopDevice = execFileSync('losetup', ['-f', '--show', backing], { encoding: 'utf8' }).trim();
  // What udev gives an EBS volume on a Nitro instance.
  mkdirSync(byIdDirectory);
  symlinkSync(loopDevice, join(byIdDirectory, 'nvme-Amazon_Elastic_Block_Store_vol0abc123'));
});

afterAll(() => {
  for (const mounted of [join(volumesDirectory, 'ebs'), join(volumesDirectory, 'registered')]) {
    try {
      execFileSync('umount', [mounted], { stdio: 'ignore' });
    } catch {}
  }
  if (loopDevice !== '') execFileSync('losetup', ['-d', loopDevice]);
  rmSync(directory, { recursive: true, force: true });
});

function ebsTask(fields: { volume_id?: string; device_name?: string; init_fs?: boolean; name?: string }) {
  const name = fields.name ?? 'ebs';
  return TaskConfigSchema.parse({
    id: 't1',
    name: 't',
    image_name: 'img',
    volumes: [
      {
        backend: 'aws',
        name,
        volume_id: fields.volume_id ?? 'vol-0abc123',
        device_name: fields.device_name ?? '/dev/sdf',
        init_fs: fields.init_fs ?? true,
      },
    ],
    volume_mounts: [{ name, path: '/data' }],
  });
}

describe.skipIf(!canUseLoopDevices)('block volumes on a loop device', () => {
  it('finds the device by the volume id in /dev/disk/by-id, or by its device path', async () => {
    const search = { byIdDirectory };
    expect(await findVolumeDevice({ name: 'v', volume_id: 'vol-0abc123', init_fs: false }, search)).toBe(
      loopDevice,
    );
    // An id is matched whole: vol-0abc12 is another volume.
    expect(
      await findVolumeDevice(
        { name: 'v', volume_id: 'vol-0abc12', device_name: '/dev/sdz', init_fs: false },
        search,
      ),
    ).toBeNull();
    // GCP-style: the attachment names a path that leads to the device.
    const gcpPath = join(directory, 'google-disk-1');
    symlinkSync(loopDevice, gcpPath);
    expect(
      await findVolumeDevice(
        { name: 'v', volume_id: 'disk-1', device_name: gcpPath, init_fs: false },
        search,
      ),
    ).toBe(loopDevice);
  });

  it('formats on first use only, mounts, and the data survives an unmount and a new mount', async () => {
    const options = { volumesDirectory, search: { byIdDirectory } };
    // A registered volume (init_fs false) without a file system is refused, never formatted.
    const refused = await prepareVolumes(ebsTask({ init_fs: false }), options).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(TaskStartError);
    expect((refused as TaskStartError).reason).toBe('volume_error');
    expect((refused as TaskStartError).message).toContain('has no file system');
    expect(await fileSystemOf(loopDevice)).toBeNull();

    const first = await prepareVolumes(ebsTask({}), options);
    const mountPoint = join(volumesDirectory, 'ebs');
    expect(first.binds).toEqual([{ source: mountPoint, target: '/data' }]);
    expect(await fileSystemOf(loopDevice)).toBe('ext4');
    expect(await isMountPoint(mountPoint)).toBe(true);
    writeFileSync(join(mountPoint, 'kept.txt'), 'written on first use\n');
    await first.release();
    await first.release();
    expect(await isMountPoint(mountPoint)).toBe(false);

    // Mounted again (as a registered volume now): not formatted again, the file is there.
    const second = await prepareVolumes(ebsTask({ init_fs: false, name: 'registered' }), options);
    expect(readFileSync(join(volumesDirectory, 'registered', 'kept.txt'), 'utf8')).toBe(
      'written on first use\n',
    );
    await second.release();
    expect(await isMountPoint(join(volumesDirectory, 'registered'))).toBe(false);
  });
});
