/**
 * Where a task's network volumes are on the host, for a runtime to mount them at their paths.
 * A `local` volume (the local backend's) is a directory the server named in `device_name`; a
 * cloud's volume is a block device the shim finds by its id, formats on first use and mounts
 * under `<shim home>/volumes/<name>` until the task ends (`block-volumes.ts`).
 */
import { statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { TaskConfig, TaskVolume } from '@dstack/core/agent-protocol';
import {
  BlockVolumeError,
  type DeviceSearch,
  mountBlockVolume,
  unmountBlockVolume,
} from './block-volumes.js';
import { TaskStartError } from './task-runtime.js';

/** dstack's termination reason for a volume the task could not have. */
export const VOLUME_ERROR = 'volume_error';

/** A host directory and where it appears in the task. */
export interface VolumeBind {
  source: string;
  target: string;
}

/** The task's volumes as host directories, and how to let go of the block devices mounted for them. */
export interface PreparedVolumes {
  binds: VolumeBind[];
  /** Unmounts the block volumes this task mounted. Idempotent; call once the container is gone or stopped. */
  release(): Promise<void>;
}

export interface VolumeHostOptions {
  /** Where block volumes are mounted, one directory per volume name. */
  volumesDirectory: string;
  /** Where devices are searched (a test's own by-id directory). */
  search?: DeviceSearch;
}

/**
 * Each of the task's `volume_mounts` as a host directory: a local volume's directory, a block
 * volume's device mounted. Throws `TaskStartError(volume_error)`, after unmounting what it mounted.
 */
export async function prepareVolumes(task: TaskConfig, options: VolumeHostOptions): Promise<PreparedVolumes> {
  const mounted: string[] = [];
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= (async () => {
      for (const mountPoint of mounted.reverse()) await unmountBlockVolume(mountPoint);
    })();
    return released;
  };
  const binds: VolumeBind[] = [];
  try {
    for (const mount of task.volume_mounts) {
      const volume = attachedVolume(task, mount.name, mount.path);
      if (volume.backend === 'local') {
        binds.push({ source: localDirectory(volume), target: mount.path });
        continue;
      }
      const mountPoint = join(options.volumesDirectory, volume.name);
      if (!mounted.includes(mountPoint)) {
        await mountBlockVolume(volume, mountPoint, options.search).catch((error: unknown) => {
          throw new TaskStartError(VOLUME_ERROR, `volume ${volume.name}: ${messageOf(error)}`);
        });
        mounted.push(mountPoint);
      }
      binds.push({ source: mountPoint, target: mount.path });
    }
  } catch (error) {
    await release().catch(() => undefined);
    throw error;
  }
  return { binds, release };
}

function attachedVolume(task: TaskConfig, name: string, path: string): TaskVolume {
  const volume = task.volumes.find((candidate) => candidate.name === name);
  if (!volume) {
    throw new TaskStartError(
      VOLUME_ERROR,
      `volume ${name} is mounted at ${path} but not attached to the task`,
    );
  }
  return volume;
}

function localDirectory(volume: TaskVolume): string {
  const directory = volume.device_name ?? '';
  if (!isAbsolute(directory) || !isDirectory(directory)) {
    throw new TaskStartError(
      VOLUME_ERROR,
      `volume ${volume.name}: its directory ${JSON.stringify(directory)} is not on this host`,
    );
  }
  return directory;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function messageOf(error: unknown): string {
  return error instanceof BlockVolumeError || error instanceof Error ? error.message : String(error);
}
