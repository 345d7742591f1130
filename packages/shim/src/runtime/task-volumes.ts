/**
 * Where a task's network volumes are on the host, for a runtime to mount them at their paths.
 * A `local` volume (the local backend's) is a directory the server named in `device_name`; a
 * block volume of a cloud (a device to find by its id, format on first use and mount) is not
 * handled by this shim yet, and is refused rather than left out.
 */
import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { TaskConfig } from '@dstack/core/agent-protocol';
import { TaskStartError } from './task-runtime.js';

/** dstack's termination reason for a volume the task could not have. */
export const VOLUME_ERROR = 'volume_error';

/** A host directory and where it appears in the task. */
export interface VolumeBind {
  source: string;
  target: string;
}

/** The host directory of each of the task's `volume_mounts`; throws `TaskStartError(volume_error)`. */
export function volumeBinds(task: TaskConfig): VolumeBind[] {
  return task.volume_mounts.map((mount) => {
    const volume = task.volumes.find((candidate) => candidate.name === mount.name);
    if (!volume) {
      throw new TaskStartError(
        VOLUME_ERROR,
        `volume ${mount.name} is mounted at ${mount.path} but not attached to the task`,
      );
    }
    if (volume.backend !== 'local') {
      throw new TaskStartError(
        VOLUME_ERROR,
        `volume ${volume.name}: ${volume.backend} volumes (block devices) are not supported by this shim yet`,
      );
    }
    const directory = volume.device_name ?? '';
    if (!isAbsolute(directory) || !isDirectory(directory)) {
      throw new TaskStartError(
        VOLUME_ERROR,
        `volume ${volume.name}: its directory ${JSON.stringify(directory)} is not on this host`,
      );
    }
    return { source: directory, target: mount.path };
  });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
