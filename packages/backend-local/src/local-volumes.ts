/**
 * The local backend's volumes: a volume is a directory under `volumes_dir` (by default in the
 * server's data directory), `<name>-<dstack volume id>`, so creating it again with the same id
 * finds the same directory. Attaching it tells the shim where it is (`device_name`: the
 * directory), and the shim's Docker runtime bind-mounts it at the job's path. A directory on
 * one host can be mounted by several jobs at once (multi-attach).
 */
import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BackendError,
  type Volume,
  type VolumeAttachmentData,
  type VolumeProvisioningData,
} from '@dstack/core';
import { LOCAL_BACKEND_TYPE } from './local-offers.js';

/** A volume directory's name: one path segment, no hidden or parent entry. */
const VOLUME_DIRECTORY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function directoryNameOf(volumeId: string): string {
  if (!VOLUME_DIRECTORY_NAME.test(volumeId)) {
    throw new BackendError(
      `invalid local volume_id ${JSON.stringify(volumeId)}: expected the name of a directory in the local backend's volumes_dir`,
    );
  }
  return volumeId;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function provisioningData(volumeId: string, sizeGb: number): VolumeProvisioningData {
  return {
    backend: LOCAL_BACKEND_TYPE,
    volume_id: volumeId,
    size_gb: sizeGb,
    availability_zone: null,
    price: 0,
    attachable: true,
    detachable: true,
    backend_data: null,
  };
}

export class LocalVolumes {
  constructor(readonly volumesDir: string) {}

  /** The directory of a volume id (the directory's name). */
  directoryOf(volumeId: string): string {
    return join(this.volumesDir, directoryNameOf(volumeId));
  }

  /**
   * Makes the volume's directory (again, for a repeated call: the same id finds it). The size
   * is recorded, not enforced: the directory shares the host's file system. Mode 0777, so that
   * a job's user of any uid in its container can write; `volumes_dir` itself is 0700, so no
   * other user of the host reaches it.
   */
  async create(volume: Volume): Promise<VolumeProvisioningData> {
    const volumeId = `${volume.name}-${volume.id}`;
    await mkdir(this.volumesDir, { recursive: true, mode: 0o700 });
    const directory = this.directoryOf(volumeId);
    await mkdir(directory, { recursive: true });
    // mkdir's mode is masked by the umask; the volume's must not be.
    await chmod(directory, 0o777);
    return provisioningData(volumeId, Math.round(volume.configuration.size ?? 0));
  }

  /** An existing directory of `volumes_dir`, named by `volume_id`. */
  async register(volume: Volume): Promise<VolumeProvisioningData> {
    const volumeId = volume.configuration.volume_id ?? '';
    if (!(await isDirectory(this.directoryOf(volumeId)))) {
      throw new BackendError(
        `no local volume ${JSON.stringify(volumeId)}: ${this.directoryOf(volumeId)} is not a directory`,
      );
    }
    return provisioningData(volumeId, Math.round(volume.configuration.size ?? 0));
  }

  /** Removes the directory and what the jobs left in it; nothing when it is gone already. */
  async delete(volume: Volume): Promise<void> {
    const volumeId = volume.provisioning_data?.volume_id ?? volume.volume_id;
    if (!volumeId) return;
    await rm(this.directoryOf(volumeId), { recursive: true, force: true });
  }

  /** Where the shim finds the volume: its directory, which must still be there. */
  async attach(volume: Volume): Promise<VolumeAttachmentData> {
    const volumeId = volume.provisioning_data?.volume_id ?? volume.volume_id ?? '';
    const directory = this.directoryOf(volumeId);
    if (!(await isDirectory(directory))) {
      throw new BackendError(`the directory of volume ${volume.name} (${directory}) is gone`);
    }
    return { device_name: directory };
  }
}
