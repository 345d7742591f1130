/**
 * Persistent disks of the emulated project (`zones/{z}/disks`) and their attachment to instances
 * (`instances.attachDisk` / `instances.detachDisk`), as dstack's volumes use them. Compute's rules
 * the emulator keeps: a name is unique in its zone (409), a disk attaches read-write to one
 * instance of its own zone, a device name is unique on the instance, and an attached disk cannot
 * be deleted (400 `resourceInUseByAnotherResource`, naming the instance). Deleting an instance
 * detaches its disks (and deletes those attached with `autoDelete`).
 *
 * With hosts that can have block devices, an attached disk is a real one in the instance's host:
 * its bytes are a sparse file of this machine (kept from its insert to its delete, so data survives
 * detach and attach) on a loop device while attached, seen in the host as `/dev/sdX` with udev's
 * `/dev/disk/by-id/google-<deviceName>` link. The attach and detach operations are DONE once the
 * host has (or no longer has) the device; a host that cannot take it fails the operation.
 */
import type { EmulatedHosts, HostBlockDevice } from '../emulated-hosts.js';
import { LoopBackedDisks } from '../hosts/loop-block-devices.js';
import { alreadyExists, GcpApiError, invalidField, notFound } from './gcp-api-error.js';
import type { GcpInstance, GcpInstances, GcpOperation } from './gcp-compute-instances.js';
import { lastSegment, link, rfc3339 } from './gcp-compute-resources.js';

/** Disk types the emulator knows, with their smallest size in GB. */
const DISK_TYPES: Readonly<Record<string, number>> = {
  'pd-standard': 10,
  'pd-balanced': 10,
  'pd-ssd': 10,
  'pd-extreme': 500,
  'hyperdisk-balanced': 4,
};
const LARGEST_DISK_GB = 65_536;
const DEVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

interface GcpDiskAttachment {
  readonly instance: GcpInstance;
  readonly deviceName: string;
  /** The device node in the instance's host: `/dev/sdb` for index 1 (the boot disk is `sda`). */
  readonly devicePath: string;
  readonly index: number;
  readonly autoDelete: boolean;
  /** The device the host has (set up by the attach, until the detach removes it). */
  onHost: HostBlockDevice | undefined;
  detaching: boolean;
}

export interface GcpDisk {
  readonly id: string;
  readonly name: string;
  readonly zone: string;
  readonly sizeGb: number;
  readonly type: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly description: string | undefined;
  readonly createdAt: number;
  /** When the insert's operation is DONE (the disk is READY). */
  readonly readyAt: number;
  /** Set by a delete: DELETING until then, gone after. */
  deletedAt: number | undefined;
  attachment: GcpDiskAttachment | undefined;
  lastAttachAt: number | undefined;
  lastDetachAt: number | undefined;
  /** The disk's bytes on this machine, made at its first attach to a host. */
}

/** One disk as `/_emulator/state` lists it. */
export interface GcpDiskState {
  readonly name: string;
  readonly zone: string;
  readonly sizeGb: number;
  readonly type: string;
  readonly status: string;
  /** The instance it is attached to, with the device name, or null. */
  readonly attachedTo: { readonly instance: string; readonly deviceName: string } | null;
}

export interface GcpDisksOptions {
  readonly project: string;
  readonly instances: GcpInstances;
  readonly hosts: EmulatedHosts | undefined;
  readonly clock: () => number;
  /** How long a disk insert or delete takes. */
  readonly operationMs: number;
  readonly onHostError: (instanceName: string, error: unknown) => void;
}

/** A disk's key in the loop-backed store, its backing file's name: zone, name and id. */
function backingKey(disk: GcpDisk): string {
  return `${disk.zone}-${disk.name}-${disk.id}`;
}

export class GcpDisks {
  readonly #all: GcpDisk[] = [];
  readonly #options: GcpDisksOptions;
  /** Host work under way (attach, detach), awaited by `close`. */
  readonly #pending = new Set<Promise<void>>();
  /** The disks' bytes while they have any, on loop devices while attached (with hosts only). */
  #loops: LoopBackedDisks | undefined;
  #sequence = 0;

  constructor(options: GcpDisksOptions) {
    this.#options = options;
  }

  #path(zone: string, name: string): string {
    return `projects/${this.#options.project}/zones/${zone}/disks/${name}`;
  }

  #instancePath(instance: GcpInstance): string {
    return `projects/${this.#options.project}/zones/${instance.zone}/instances/${instance.name}`;
  }

  /** The disk while the API shows it (until its delete is DONE). */
  find(zone: string, name: string): GcpDisk | undefined {
    this.#sweep();
    const now = this.#options.clock();
    return this.#all.find(
      (disk) =>
        disk.zone === zone && disk.name === name && (disk.deletedAt === undefined || now < disk.deletedAt),
    );
  }

  listIn(zone: string): GcpDisk[] {
    this.#sweep();
    const now = this.#options.clock();
    return this.#all.filter(
      (disk) => disk.zone === zone && (disk.deletedAt === undefined || now < disk.deletedAt),
    );
  }

  status(disk: GcpDisk): 'CREATING' | 'READY' | 'DELETING' {
    const now = this.#options.clock();
    if (disk.deletedAt !== undefined) return 'DELETING';
    return now < disk.readyAt ? 'CREATING' : 'READY';
  }

  insert(zone: string, body: Record<string, unknown>, name: string): GcpOperation {
    const path = this.#path(zone, name);
    if (this.find(zone, name)) throw alreadyExists(path);
    const typeReference = String(body.type ?? `zones/${zone}/diskTypes/pd-standard`);
    const type = lastSegment(typeReference);
    const typeZone = /(?:^|\/)zones\/([^/]+)\/diskTypes\//.exec(typeReference)?.[1];
    const smallest = DISK_TYPES[type];
    if (smallest === undefined || (typeZone !== undefined && typeZone !== zone)) {
      throw invalidField(
        'resource.type',
        `'${typeReference}'. Disk type '${type}' does not exist in zone '${zone}'.`,
      );
    }
    const sizeGb = Number(body.sizeGb ?? (type === 'pd-standard' ? 500 : 100));
    if (!Number.isInteger(sizeGb) || sizeGb < smallest || sizeGb > LARGEST_DISK_GB) {
      throw invalidField(
        'resource.sizeGb',
        `'${String(body.sizeGb)}'. Disk size must be between ${smallest} GB and ${LARGEST_DISK_GB} GB for ${type}.`,
      );
    }
    const labels = body.labels ?? {};
    if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
      throw invalidField('resource.labels', 'labels must be a map of strings');
    }
    for (const [key, value] of Object.entries(labels)) {
      if (typeof value !== 'string')
        throw invalidField(`resource.labels.${key}`, 'a label value must be a string');
    }
    const now = this.#options.clock();
    this.#sequence += 1;
    const disk: GcpDisk = {
      id: String(3_000_000_000_000_000_000n + BigInt(this.#sequence) * 7_933n),
      name,
      zone,
      sizeGb,
      type,
      labels: labels as Record<string, string>,
      description: typeof body.description === 'string' ? body.description : undefined,
      createdAt: now,
      readyAt: now + this.#options.operationMs,
      deletedAt: undefined,
      attachment: undefined,
      lastAttachAt: undefined,
      lastDetachAt: undefined,
    };
    this.#all.push(disk);
    return this.#operation(disk, 'insert', now, () => disk.readyAt);
  }

  delete(disk: GcpDisk): GcpOperation {
    const attachment = this.#liveAttachment(disk);
    if (attachment) {
      throw new GcpApiError(
        400,
        'resourceInUseByAnotherResource',
        `The disk resource '${this.#path(disk.zone, disk.name)}' is already being used by '${this.#instancePath(attachment.instance)}'`,
      );
    }
    const now = this.#options.clock();
    if (disk.deletedAt === undefined) {
      disk.deletedAt = now + this.#options.operationMs;
      this.#removeBackingFile(disk);
    }
    const deletedAt = disk.deletedAt;
    return this.#operation(disk, 'delete', now, () => deletedAt);
  }

  /** `instances.attachDisk`: the body's `source` disk to `instance`, as `deviceName`. */
  attach(instance: GcpInstance, body: Record<string, unknown>): GcpOperation {
    const source = body.source;
    if (typeof source !== 'string' || source === '') {
      throw new GcpApiError(400, 'required', `Required field 'resource.source' not specified`);
    }
    const parsed = /(?:^|\/)zones\/([^/]+)\/disks\/([^/]+)$/.exec(source);
    if (!parsed) throw invalidField('resource.source', `'${source}'. Not a disk reference.`);
    const [, zone, name] = parsed as unknown as [string, string, string];
    if (zone !== instance.zone) {
      throw invalidField(
        'resource.source',
        `'${source}'. Disk must be in the same zone as the instance ('${instance.zone}').`,
      );
    }
    const disk = this.find(zone, name);
    if (!disk) throw notFound(this.#path(zone, name));
    if (this.status(disk) !== 'READY') {
      throw new GcpApiError(400, 'resourceNotReady', `The resource '${this.#path(zone, name)}' is not ready`);
    }
    const holder = this.#liveAttachment(disk);
    if (holder) {
      throw new GcpApiError(
        400,
        'resourceInUseByAnotherResource',
        `The disk resource '${this.#path(zone, name)}' is already being used by '${this.#instancePath(holder.instance)}'`,
      );
    }
    if (body.mode !== undefined && body.mode !== 'READ_WRITE') {
      throw invalidField(
        'resource.mode',
        `'${String(body.mode)}'. The emulator attaches disks READ_WRITE only.`,
      );
    }
    const onInstance = this.attachmentsOf(instance);
    const index = firstFreeIndex(onInstance.map((each) => each.index));
    const deviceName = body.deviceName === undefined ? `persistent-disk-${index}` : String(body.deviceName);
    if (!DEVICE_NAME.test(deviceName)) {
      throw invalidField(
        'resource.deviceName',
        `'${deviceName}'. Must be a match of regex '[a-z]([-a-z0-9]{0,61}[a-z0-9])?'`,
      );
    }
    if (onInstance.some((each) => each.deviceName === deviceName)) {
      throw invalidField(
        'resource.deviceName',
        `'${deviceName}'. The device name is already in use on instance '${instance.name}'.`,
      );
    }
    const attachment: GcpDiskAttachment = {
      instance,
      deviceName,
      devicePath: `/dev/sd${String.fromCharCode('a'.charCodeAt(0) + index)}`,
      index,
      autoDelete: body.autoDelete === true,
      onHost: undefined,
      detaching: false,
    };
    const now = this.#options.clock();
    disk.attachment = attachment;
    disk.lastAttachAt = now;
    const hosts = this.#options.hosts;
    if (!hosts?.attachBlockDevice) {
      return this.#operation(disk, 'attachDisk', now, () => now + this.#options.operationMs, instance);
    }
    let settledAt = Number.POSITIVE_INFINITY;
    const operation = this.#operation(disk, 'attachDisk', now, () => settledAt, instance);
    this.#track(
      (async () => {
        await instance.host?.settled;
        const hostStatus = instance.host?.status ?? 'none';
        if (hostStatus !== 'up') throw new Error(`the instance's host is ${hostStatus}`);
        const loops = this.#loopBackedDisks();
        await loops.create(backingKey(disk), disk.sizeGb);
        const loop = await loops.attach(backingKey(disk));
        const device: HostBlockDevice = {
          path: attachment.devicePath,
          major: loop.major,
          minor: loop.minor,
          links: [`/dev/disk/by-id/google-${deviceName}`],
        };
        try {
          await hosts.attachBlockDevice?.(instance.id, device);
        } catch (error) {
          await loops.detach(backingKey(disk));
          throw error;
        }
        attachment.onHost = device;
      })().then(
        () => {
          settledAt = Math.max(now + this.#options.operationMs, this.#options.clock());
        },
        (error: unknown) => {
          if (disk.attachment === attachment) disk.attachment = undefined;
          operation.error = {
            code: 'INTERNAL_ERROR',
            message: `Attaching '${disk.name}' to '${instance.name}' failed: ${String(error)}`,
            httpStatus: 500,
            httpMessage: 'INTERNAL SERVER ERROR',
            errorDetails: [],
          };
          settledAt = this.#options.clock();
          this.#options.onHostError(instance.name, error);
        },
      ),
    );
    return operation;
  }

  /** `instances.detachDisk?deviceName=`. */
  detach(instance: GcpInstance, deviceName: string): GcpOperation {
    const attachment = this.attachmentsOf(instance).find(
      (each) => each.deviceName === deviceName && !each.detaching,
    );
    const disk = this.#all.find((each) => each.attachment === attachment);
    if (!attachment || !disk) {
      throw invalidField(
        'deviceName',
        `'${deviceName}'. No attached disk found with device name '${deviceName}' on instance '${instance.name}'.`,
      );
    }
    attachment.detaching = true;
    const now = this.#options.clock();
    const finish = () => {
      if (disk.attachment === attachment) disk.attachment = undefined;
      disk.lastDetachAt = this.#options.clock();
    };
    const hosts = this.#options.hosts;
    if (!hosts?.detachBlockDevice || !attachment.onHost) {
      finish();
      return this.#operation(disk, 'detachDisk', now, () => now + this.#options.operationMs, instance);
    }
    let settledAt = Number.POSITIVE_INFINITY;
    const operation = this.#operation(disk, 'detachDisk', now, () => settledAt, instance);
    this.#track(
      (async () => {
        const device = attachment.onHost;
        if (device) await hosts.detachBlockDevice?.(instance.id, device);
        attachment.onHost = undefined;
        await this.#loops?.detach(backingKey(disk));
      })()
        .catch((error: unknown) => this.#options.onHostError(instance.name, error))
        .finally(() => {
          finish();
          settledAt = Math.max(now + this.#options.operationMs, this.#options.clock());
        }),
    );
    return operation;
  }

  /** The disks attached to `instance` (a deleted instance has none), by index. */
  attachmentsOf(instance: GcpInstance): GcpDiskAttachment[] {
    this.#sweep();
    return this.#all
      .flatMap((disk) => (disk.attachment?.instance === instance ? [disk.attachment] : []))
      .sort((a, b) => a.index - b.index);
  }

  /** The `disks[]` entries of an instance resource for its attached disks. */
  attachedDiskResources(instance: GcpInstance): Record<string, unknown>[] {
    this.#sweep();
    return this.#all.flatMap((disk) => {
      const attachment = disk.attachment;
      if (attachment?.instance !== instance) return [];
      return [
        {
          kind: 'compute#attachedDisk',
          type: 'PERSISTENT',
          mode: 'READ_WRITE',
          source: link(this.#path(disk.zone, disk.name)),
          deviceName: attachment.deviceName,
          index: attachment.index,
          boot: false,
          autoDelete: attachment.autoDelete,
          interface: 'SCSI',
          diskSizeGb: String(disk.sizeGb),
        },
      ];
    });
  }

  resource(disk: GcpDisk): Record<string, unknown> {
    const attachment = this.#liveAttachment(disk);
    const zonePath = `projects/${this.#options.project}/zones/${disk.zone}`;
    return {
      kind: 'compute#disk',
      id: disk.id,
      creationTimestamp: rfc3339(disk.createdAt),
      name: disk.name,
      ...(disk.description !== undefined ? { description: disk.description } : {}),
      sizeGb: String(disk.sizeGb),
      zone: link(zonePath),
      status: this.status(disk),
      selfLink: link(this.#path(disk.zone, disk.name)),
      type: link(`${zonePath}/diskTypes/${disk.type}`),
      labels: disk.labels,
      labelFingerprint: 'emulator',
      ...(attachment ? { users: [link(this.#instancePath(attachment.instance))] } : {}),
      ...(disk.lastAttachAt !== undefined ? { lastAttachTimestamp: rfc3339(disk.lastAttachAt) } : {}),
      ...(disk.lastDetachAt !== undefined ? { lastDetachTimestamp: rfc3339(disk.lastDetachAt) } : {}),
      physicalBlockSizeBytes: '4096',
    };
  }

  state(): GcpDiskState[] {
    this.#sweep();
    const now = this.#options.clock();
    return this.#all
      .filter((disk) => disk.deletedAt === undefined || now < disk.deletedAt)
      .map((disk) => ({
        name: disk.name,
        zone: disk.zone,
        sizeGb: disk.sizeGb,
        type: disk.type,
        status: this.status(disk),
        attachedTo: disk.attachment
          ? { instance: disk.attachment.instance.name, deviceName: disk.attachment.deviceName }
          : null,
      }));
  }

  /** Waits for host work under way, takes every device off its host and removes the backing files. */
  async close(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    const hosts = this.#options.hosts;
    for (const disk of this.#all) {
      const device = disk.attachment?.onHost;
      if (device && disk.attachment && hosts?.detachBlockDevice) {
        await hosts.detachBlockDevice(disk.attachment.instance.id, device).catch(() => undefined);
      }
    }
    await this.#loops?.close();
    this.#loops = undefined;
  }

  #track(work: Promise<void>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  #loopBackedDisks(): LoopBackedDisks {
    this.#loops ??= new LoopBackedDisks('dstack-gcp-disks-');
    return this.#loops;
  }

  #removeBackingFile(disk: GcpDisk): void {
    if (this.#loops) this.#track(this.#loops.delete(backingKey(disk)));
  }

  #liveAttachment(disk: GcpDisk): GcpDiskAttachment | undefined {
    this.#sweep();
    return disk.attachment;
  }

  /**
   * Deleting an instance detaches its disks (their loop devices freed) and deletes those attached
   * with `autoDelete`.
   */
  #sweep(): void {
    const { instances } = this.#options;
    for (const disk of this.#all) {
      const attachment = disk.attachment;
      if (!attachment) continue;
      const status = instances.status(attachment.instance);
      if (status !== undefined && attachment.instance.stopReason !== 'deleted') continue;
      disk.attachment = undefined;
      disk.lastDetachAt = this.#options.clock();
      if (attachment.onHost && this.#loops) this.#track(this.#loops.detach(backingKey(disk)));
      if (attachment.autoDelete && disk.deletedAt === undefined) {
        disk.deletedAt = this.#options.clock();
        this.#removeBackingFile(disk);
      }
    }
  }

  #operation(
    disk: GcpDisk,
    type: 'insert' | 'delete' | 'attachDisk' | 'detachDisk',
    now: number,
    doneAt: () => number,
    instance?: GcpInstance,
  ): GcpOperation {
    return this.#options.instances.addOperation({
      zone: disk.zone,
      operationType: type,
      targetKind: instance ? 'instances' : 'disks',
      targetName: instance ? instance.name : disk.name,
      targetId: instance ? instance.id : disk.id,
      insertTime: now,
      runningAt: now,
      doneAt,
      error: undefined,
      statusMessage: undefined,
    });
  }
}

/** The lowest index from 1 (0 is the boot disk) no attached disk has. */
function firstFreeIndex(taken: readonly number[]): number {
  let index = 1;
  while (taken.includes(index)) index += 1;
  return index;
}
