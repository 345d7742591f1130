/**
 * EBS volumes and placement groups of the emulated account.
 *
 * A volume is `creating` for `volumeCreatingMs`, then `available`; an attachment is `attaching`
 * until `attachMs` passed and its device is on the host, then `attached` (the volume `in-use`);
 * a detach is `detaching` until `detachMs` passed and the device is gone, then the volume is
 * `available` again. With hosts that take devices and loop devices usable, an attached volume is
 * a real block device in the instance's host (`LoopBackedDisks`): named as on a Nitro instance
 * (`/dev/nvme<N>n1`) with udev's `/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_<vol id without
 * the dash>` link, since a loop device has no serial. Terminating an instance detaches its volumes.
 */
import type { EmulatedHosts, HostBlockDevice } from '../emulated-hosts.js';
import type { LoopBackedDisks } from '../hosts/loop-block-devices.js';
import type { Ec2Instance } from './aws-ec2-instances.js';

export type Ec2VolumeStatus = 'creating' | 'available' | 'in-use';
export type Ec2AttachmentStatus = 'attaching' | 'attached' | 'detaching';

export interface Ec2VolumeTimeline {
  /** creating → available. Default 200. */
  volumeCreatingMs: number;
  /** attaching → attached (and not before the device is on the host). Default 200. */
  attachMs: number;
  /** detaching → detached (and not before the device is off the host). Default 200. */
  detachMs: number;
}

export const DEFAULT_EC2_VOLUME_TIMELINE: Readonly<Ec2VolumeTimeline> = {
  volumeCreatingMs: 200,
  attachMs: 200,
  detachMs: 200,
};

export interface Ec2Attachment {
  readonly instanceId: string;
  readonly device: string;
  readonly attachedAt: number;
  detachStartedAt: number | undefined;
  /** The device in the host, once it is there. */
  hostDevice: HostBlockDevice | undefined;
  /** The work on the host under way (attach, then detach), in order. */
  work: Promise<void>;
  /** Set when the device is on the host (or there is no host to put it on); cleared at detach start. */
  deviceReady: boolean;
  /** Set when the device is off the host again. */
  deviceGone: boolean;
}

export interface Ec2Volume {
  readonly id: string;
  readonly region: string;
  readonly zone: string;
  readonly sizeGiB: number;
  readonly volumeType: string;
  readonly iops: number;
  readonly tags: Map<string, string>;
  readonly createdAt: number;
  readonly clientToken: string | undefined;
  attachment: Ec2Attachment | undefined;
}

export interface Ec2PlacementGroup {
  readonly name: string;
  readonly id: string;
  readonly region: string;
  readonly strategy: string;
  readonly tags: Map<string, string>;
}

export interface Ec2VolumesOptions {
  readonly clock: () => number;
  readonly timeline: Ec2VolumeTimeline;
  readonly hosts: EmulatedHosts | undefined;
  /** Where volumes are real block devices; undefined: volumes are records only. */
  readonly disks: LoopBackedDisks | undefined;
  readonly onHostError: (instanceId: string, error: unknown) => void;
}

/** The udev id of an EBS volume on a Nitro instance: the serial is the id without its dash. */
export function nitroByIdLink(volumeId: string): string {
  return `/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_${volumeId.replace('-', '')}`;
}

export class Ec2Volumes {
  readonly #volumes: Ec2Volume[] = [];
  readonly placementGroups: Ec2PlacementGroup[] = [];
  readonly #options: Ec2VolumesOptions;
  /** Host work of deleted volumes and detached attachments, for `close` to wait on. */
  readonly #pending = new Set<Promise<void>>();
  /** Each volume's backing file being made (attach waits for it). */
  readonly #backing = new Map<string, Promise<void>>();

  constructor(options: Ec2VolumesOptions) {
    this.#options = options;
  }

  all(): readonly Ec2Volume[] {
    return this.#volumes;
  }

  find(region: string, id: string): Ec2Volume | undefined {
    return this.#volumes.find((volume) => volume.id === id && volume.region === region);
  }

  byClientToken(region: string, token: string): Ec2Volume | undefined {
    return this.#volumes.find((volume) => volume.region === region && volume.clientToken === token);
  }

  create(volume: Omit<Ec2Volume, 'createdAt' | 'attachment'>): Ec2Volume {
    const created: Ec2Volume = { ...volume, createdAt: this.#options.clock(), attachment: undefined };
    this.#volumes.push(created);
    const disks = this.#options.disks;
    if (disks) this.#backing.set(created.id, this.#track(disks.create(created.id, created.sizeGiB)));
    return created;
  }

  status(volume: Ec2Volume): Ec2VolumeStatus {
    this.#settle(volume);
    if (volume.attachment) return 'in-use';
    return this.#options.clock() < volume.createdAt + this.#options.timeline.volumeCreatingMs
      ? 'creating'
      : 'available';
  }

  attachmentStatus(volume: Ec2Volume): Ec2AttachmentStatus | undefined {
    this.#settle(volume);
    const attachment = volume.attachment;
    if (!attachment) return undefined;
    if (attachment.detachStartedAt !== undefined) return 'detaching';
    const due = attachment.attachedAt + this.#options.timeline.attachMs;
    return attachment.deviceReady && this.#options.clock() >= due ? 'attached' : 'attaching';
  }

  /** Attaches (the caller checked EC2's rules); the device goes onto the host in the background. */
  attach(volume: Ec2Volume, instance: Ec2Instance, device: string): void {
    const attachment: Ec2Attachment = {
      instanceId: instance.id,
      device,
      attachedAt: this.#options.clock(),
      detachStartedAt: undefined,
      hostDevice: undefined,
      work: Promise.resolve(),
      deviceReady: false,
      deviceGone: false,
    };
    volume.attachment = attachment;
    const { hosts, disks } = this.#options;
    if (!hosts?.attachBlockDevice || !disks || instance.host?.status !== 'up') {
      attachment.deviceReady = true;
      return;
    }
    const attachBlockDevice = hosts.attachBlockDevice.bind(hosts);
    const hostDevice = (loop: { major: number; minor: number }): HostBlockDevice => ({
      path: `/dev/nvme${this.#nvmeIndex(instance.id, volume)}n1`,
      major: loop.major,
      minor: loop.minor,
      links: [nitroByIdLink(volume.id)],
    });
    attachment.work = (async () => {
      try {
        await this.#backing.get(volume.id);
        const loop = await disks.attach(volume.id);
        const onHost = hostDevice(loop);
        attachment.hostDevice = onHost;
        await attachBlockDevice(instance.id, onHost);
      } catch (error) {
        this.#options.onHostError(instance.id, error);
      } finally {
        attachment.deviceReady = true;
      }
    })();
  }

  /** Starts the detach; the device leaves the host in the background. */
  detach(volume: Ec2Volume): void {
    const attachment = volume.attachment;
    if (!attachment || attachment.detachStartedAt !== undefined) return;
    attachment.detachStartedAt = this.#options.clock();
    const { hosts, disks } = this.#options;
    attachment.work = this.#track(
      attachment.work.then(async () => {
        try {
          if (attachment.hostDevice && hosts?.detachBlockDevice) {
            await hosts.detachBlockDevice(attachment.instanceId, attachment.hostDevice);
          }
        } catch (error) {
          this.#options.onHostError(attachment.instanceId, error);
        }
        await disks?.detach(volume.id).catch((error: unknown) => {
          this.#options.onHostError(attachment.instanceId, error);
        });
        attachment.deviceGone = true;
      }),
    );
  }

  /** EC2 detaches the volumes of an instance that is terminated. */
  detachAllOf(instanceId: string): void {
    for (const volume of this.#volumes) {
      if (volume.attachment?.instanceId === instanceId) this.detach(volume);
    }
  }

  delete(volume: Ec2Volume): void {
    const index = this.#volumes.indexOf(volume);
    if (index !== -1) this.#volumes.splice(index, 1);
    const disks = this.#options.disks;
    if (disks)
      this.#track((volume.attachment?.work ?? Promise.resolve()).then(() => disks.delete(volume.id)));
  }

  /** Waits for the host work under way (the emulator's close). */
  async settled(): Promise<void> {
    for (const volume of this.#volumes) await volume.attachment?.work.catch(() => undefined);
    await Promise.all([...this.#pending]);
  }

  /** A finished detach leaves the volume. */
  #settle(volume: Ec2Volume): void {
    const attachment = volume.attachment;
    if (!attachment || attachment.detachStartedAt === undefined || !attachment.deviceGone) return;
    if (this.#options.clock() >= attachment.detachStartedAt + this.#options.timeline.detachMs) {
      volume.attachment = undefined;
    }
  }

  /** The lowest NVMe index the instance's other volumes do not hold (nvme0n1 is the root volume). */
  #nvmeIndex(instanceId: string, volume: Ec2Volume): number {
    const taken = new Set(
      this.#volumes
        .filter((other) => other !== volume && other.attachment?.instanceId === instanceId)
        .map((other) => other.attachment?.hostDevice?.path),
    );
    let index = 1;
    while (taken.has(`/dev/nvme${index}n1`)) index += 1;
    return index;
  }

  #track(work: Promise<void>): Promise<void> {
    const tracked = work.catch((error: unknown) => this.#options.onHostError('volumes', error));
    this.#pending.add(tracked);
    void tracked.finally(() => this.#pending.delete(tracked));
    return tracked;
  }
}
