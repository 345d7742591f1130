/**
 * dstack volumes on GCP as persistent disks, the way dstack's GCP backend does it: a `pd-balanced`
 * disk in the first zone of the volume's region (or its `availability_zone`), labelled as dstack
 * labels it; registered volumes found by name in the region's zones; attached read-write with
 * `autoDelete: false` under the device name `pd-{disk}`, which the guest's udev links as
 * `/dev/disk/by-id/google-pd-{disk}`: that path is the attachment's `device_name`, where the shim
 * finds the device. The disk's name is `dstack-{project}-{volume}-{8 characters from the volume's
 * id}`, so a create the server repeats (it never stored the answer) finds the disk the first made.
 */
import {
  BackendError,
  generateUniqueBackendName,
  type JobProvisioningData,
  mergeTags,
  type Volume,
  type VolumeAttachmentData,
  type VolumeProvisioningData,
} from '@dstack/core';
import type { GcpComputeApi } from './gcp-api.js';
import { GCP_BACKEND_TYPE, type GcpConfig } from './gcp-config.js';
import { sanitize, validLabels } from './gcp-instance-body.js';
import {
  type GcpOperationResource,
  type WaitForOperationOptions,
  waitForGcpOperation,
} from './gcp-operations.js';
import { GcpApiCallError, isNotFound } from './gcp-rest.js';

/** The disk type of the volumes dstack creates. */
export const GCP_VOLUME_DISK_TYPE = 'pd-balanced';
/** dstack's price of a volume: USD per GB-month, the highest across regions. */
const PRICE_PER_GB_MONTH = 0.12;
/** Longest Compute resource name. */
const MAX_RESOURCE_NAME_LENGTH = 63;
/** Machine series whose instances cannot attach persistent disks (Hyperdisk only), as dstack lists them. */
const NO_PERSISTENT_DISK_SERIES = ['m4-', 'c4-', 'n4-', 'h3-', 'v6e', 'a4-', 'g4-'];

interface GcpDiskResource {
  name: string;
  sizeGb: string | number;
  type: string;
  selfLink: string;
  users?: string[];
}

/** What `backend_data` of a volume's provisioning data holds (dstack's `GCPVolumeDiskBackendData`). */
export interface GcpVolumeBackendData {
  readonly type: 'disk';
  readonly disk_type: string;
}

export interface GcpVolumesSettings {
  readonly api: GcpComputeApi;
  readonly config: GcpConfig;
  /** The zones of a region, sorted. */
  readonly zonesOf: (region: string) => Promise<string[]>;
  readonly operations?: WaitForOperationOptions;
}

/** The device name a disk is attached under (dstack's `pd-{volume_id}`). */
export function gcpVolumeDeviceName(diskName: string): string {
  return `pd-${diskName}`;
}

/** Where the guest finds the attached disk: udev's `/dev/disk/by-id/google-{deviceName}`. */
export function gcpVolumeDevicePath(diskName: string): string {
  return `/dev/disk/by-id/google-${gcpVolumeDeviceName(diskName)}`;
}

/** The disk's name for the volume, the same for every call with the same volume id. */
export function gcpDiskNameFor(volume: Volume): string {
  return generateUniqueBackendName(sanitize(volume.project_name), sanitize(volume.name), {
    maxLength: MAX_RESOURCE_NAME_LENGTH,
    seed: volume.id,
  }).replace(/_/g, '-');
}

function lastSegment(link: string): string {
  return link.split('/').filter(Boolean).at(-1) ?? '';
}

function zoneOfVolume(volume: Volume): string {
  const zone = volume.provisioning_data?.availability_zone;
  if (!zone)
    throw new BackendError(`Volume ${volume.name} has no availability zone (it was never provisioned)`);
  return zone;
}

function diskIdOf(volume: Volume): string {
  const id = volume.volume_id ?? volume.provisioning_data?.volume_id;
  if (!id) throw new BackendError(`Volume ${volume.name} has no persistent disk (it was never provisioned)`);
  return id;
}

export class GcpVolumes {
  readonly #settings: GcpVolumesSettings;

  constructor(settings: GcpVolumesSettings) {
    this.#settings = settings;
  }

  get #api(): GcpComputeApi {
    return this.#settings.api;
  }

  #wait(scope: string, operation: GcpOperationResource, what: string) {
    return waitForGcpOperation(this.#api, scope, operation, what, this.#settings.operations);
  }

  async #getDisk(zone: string, name: string): Promise<GcpDiskResource | undefined> {
    try {
      return await this.#api.get<GcpDiskResource>(`zones/${zone}/disks/${encodeURIComponent(name)}`);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  #provisioningData(disk: GcpDiskResource, zone: string, price: number | null): VolumeProvisioningData {
    const backendData: GcpVolumeBackendData = { type: 'disk', disk_type: lastSegment(disk.type) };
    return {
      backend: GCP_BACKEND_TYPE,
      volume_id: disk.name,
      size_gb: Number(disk.sizeGb),
      availability_zone: zone,
      price,
      attachable: true,
      detachable: true,
      backend_data: JSON.stringify(backendData),
    };
  }

  /** Finds the disk `volume_id` in one of the region's zones. */
  async register(volume: Volume): Promise<VolumeProvisioningData> {
    const name = volume.configuration.volume_id;
    if (!name) throw new BackendError(`Volume ${volume.name} names no volume_id to register`);
    for (const zone of await this.#settings.zonesOf(volume.configuration.region)) {
      const disk = await this.#getDisk(zone, name);
      if (disk) return this.#provisioningData(disk, zone, null);
    }
    throw new BackendError(`Persistent disk ${name} not found in ${volume.configuration.region}`);
  }

  /** Inserts the disk and waits for it; a disk of this name already there is the one an earlier call made. */
  async create(volume: Volume): Promise<VolumeProvisioningData> {
    const { configuration } = volume;
    if (configuration.size == null) throw new BackendError(`Volume ${volume.name} has no size to create`);
    let zones = await this.#settings.zonesOf(configuration.region);
    if (configuration.availability_zone)
      zones = zones.filter((zone) => zone === configuration.availability_zone);
    const zone = zones[0];
    if (!zone) throw new BackendError(`Failed to find availability zone in region ${configuration.region}`);
    const name = gcpDiskNameFor(volume);
    const labels = validLabels(
      mergeTags(
        {
          owner: 'dstack',
          dstack_project: volume.project_name.toLowerCase(),
          dstack_name: volume.name,
          dstack_user: volume.user,
        },
        this.#settings.config.tags,
        configuration.tags,
      ),
    );
    try {
      const operation = await this.#api.post<GcpOperationResource>(`zones/${zone}/disks`, {
        name,
        sizeGb: String(Math.ceil(configuration.size)),
        type: `zones/${zone}/diskTypes/${GCP_VOLUME_DISK_TYPE}`,
        labels,
      });
      await this.#wait(`zones/${zone}`, operation, `creating persistent disk ${name}`);
    } catch (error) {
      if (!(error instanceof GcpApiCallError && error.statusCode === 409)) throw error;
    }
    const disk = await this.#getDisk(zone, name);
    if (!disk) throw new BackendError(`Persistent disk ${name} vanished after its creation`);
    return this.#provisioningData(disk, zone, Number(disk.sizeGb) * PRICE_PER_GB_MONTH);
  }

  /** Deletes the disk; a missing one is fine. */
  async delete(volume: Volume): Promise<void> {
    const zone = zoneOfVolume(volume);
    const name = diskIdOf(volume);
    try {
      const operation = await this.#api.delete<GcpOperationResource>(
        `zones/${zone}/disks/${encodeURIComponent(name)}`,
      );
      await this.#wait(`zones/${zone}`, operation, `deleting persistent disk ${name}`);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** Attaches the disk to the instance (once: a disk this instance already has is attached). */
  async attach(volume: Volume, provisioningData: JobProvisioningData): Promise<VolumeAttachmentData> {
    const instanceType = provisioningData.instance_type.name;
    if (NO_PERSISTENT_DISK_SERIES.some((series) => instanceType.startsWith(series))) {
      throw new BackendError(`Instance type ${instanceType} does not support Persistent disk volumes`);
    }
    const zone = zoneOfVolume(volume);
    const name = diskIdOf(volume);
    const instance = provisioningData.instance_id;
    const disk = await this.#getDisk(zone, name);
    if (!disk) throw new BackendError(`Persistent disk ${name} not found in ${zone}`);
    const attached = { device_name: gcpVolumeDevicePath(name) };
    if ((disk.users ?? []).some((user) => user.endsWith(`/zones/${zone}/instances/${instance}`)))
      return attached;
    try {
      const operation = await this.#api.post<GcpOperationResource>(
        `zones/${zone}/instances/${encodeURIComponent(instance)}/attachDisk`,
        { source: disk.selfLink, autoDelete: false, deviceName: gcpVolumeDeviceName(name) },
      );
      await this.#wait(`zones/${zone}`, operation, `attaching persistent disk ${name} to ${instance}`);
    } catch (error) {
      if (isNotFound(error))
        throw new BackendError(`Disk ${name} or instance ${instance} not found`, { cause: error });
      throw error;
    }
    return attached;
  }

  /** Detaches the disk; one the instance no longer has (or an instance that is gone) is detached. */
  async detach(volume: Volume, provisioningData: JobProvisioningData): Promise<void> {
    const zone = zoneOfVolume(volume);
    const name = diskIdOf(volume);
    const instance = provisioningData.instance_id;
    try {
      const operation = await this.#api.post<GcpOperationResource>(
        `zones/${zone}/instances/${encodeURIComponent(instance)}/detachDisk`,
        undefined,
        { deviceName: gcpVolumeDeviceName(name) },
      );
      await this.#wait(`zones/${zone}`, operation, `detaching persistent disk ${name} from ${instance}`);
    } catch (error) {
      if (isNotFound(error)) return;
      if (error instanceof GcpApiCallError && /No attached disk found/i.test(error.message)) return;
      throw error;
    }
  }

  /** Whether the disk no longer lists the instance among its users. */
  async isDetached(volume: Volume, provisioningData: JobProvisioningData): Promise<boolean> {
    const zone = zoneOfVolume(volume);
    const disk = await this.#getDisk(zone, diskIdOf(volume));
    const instance = provisioningData.instance_id;
    return !(disk?.users ?? []).some((user) => user.endsWith(`/zones/${zone}/instances/${instance}`));
  }
}
