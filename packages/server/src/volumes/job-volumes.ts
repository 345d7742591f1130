/**
 * A job's volumes (its spec's `volumes`): which volumes its names resolve to, where that lets the
 * job be placed (the volumes' backend, region and zone; backends that can mount them), attaching
 * them to the job's instance when it starts and detaching them when it ends, however it ends.
 *
 * An attachment is recorded (`volume_attachments`, with the job) before the provider is asked,
 * under the volume's row lock, so a volume being deleted is never attached and one attached is
 * never deleted; the job's end detaches every attachment it recorded.
 */
import {
  type ComputeWithVolumes,
  externalVolumeId,
  hasCapability,
  type InstanceMountPoint,
  type JobProvisioningData,
  type JobSpec,
  type MountPoint,
  type RunConfiguration,
  type Volume,
  type VolumeMountPoint,
} from '@dstack/core';
import type { TaskInstanceMount, TaskVolume, TaskVolumeMount } from '@dstack/core/agent-protocol';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import {
  instanceProvisioningDataOf,
  volumeAttachmentDataColumn,
  volumeConfigurationOf,
  volumeProvisioningDataOf,
} from '../db/json-columns.js';
import type { InstancesTable, VolumesTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { volumeComputeAmong } from './volume-backends.js';
import { volumesOf } from './volume-models.js';
import { lockVolumeRow } from './volumes.js';

/** The backend type of SSH fleet hosts: their shim mounts instance paths (with Docker). */
const SSH_FLEET_BACKEND = 'remote';
/** A detach that has not finished after this long is forced. */
const FORCE_DETACH_AFTER_MS = 5 * 60_000;
/** A detach that keeps failing is given up after this long (the attachment is forgotten). */
const GIVE_UP_DETACH_AFTER_MS = 15 * 60_000;

/** The job's volumes cannot be had: the job ends `volume_error` with this message (a 400 at plan time). */
export class JobVolumeError extends Error {
  override readonly name = 'JobVolumeError';
}

function isVolumeMount(mount: MountPoint): mount is VolumeMountPoint {
  return 'name' in mount;
}

function isInstanceMount(mount: MountPoint): mount is InstanceMountPoint {
  return 'instance_path' in mount;
}

/** One network mount point of the job and the volumes that may serve it (any one of its names). */
export interface ResolvedMount {
  path: string;
  names: string[];
  volumes: VolumesTable[];
}

export interface ResolvedJobVolumes {
  mounts: ResolvedMount[];
  instanceMounts: InstanceMountPoint[];
}

const VARIABLE = /\$\{\{\s*([^}]*?)\s*\}\}/g;

/**
 * The configuration's `volumes` for job `jobNum`: `${{ dstack.node_rank }}` and
 * `${{ dstack.job_num }}` in names become the job's number, as dstack's job configurator does.
 * Any other variable is refused, naming the field.
 */
export function jobMountPoints(mounts: readonly MountPoint[], jobNum: number): MountPoint[] {
  const values: Record<string, string> = {
    'dstack.node_rank': String(jobNum),
    'dstack.job_num': String(jobNum),
  };
  return mounts.map((mount, index) => {
    if (!isVolumeMount(mount)) return mount;
    const interpolate = (name: string) =>
      name.replace(VARIABLE, (_match, variable: string) => {
        const value = values[variable];
        if (value === undefined) {
          throw new JobVolumeError(
            `volumes[${index}].name: unknown variable \${{ ${variable} }} (a volume name may use dstack.node_rank and dstack.job_num)`,
          );
        }
        return value;
      });
    return {
      ...mount,
      name: Array.isArray(mount.name) ? mount.name.map(interpolate) : interpolate(mount.name),
    };
  });
}

/**
 * The volumes the job's mount points name, live ones only. Throws `JobVolumeError` naming a
 * volume that does not exist or is not `active` (dstack: "Cannot mount volumes that are not active").
 */
export async function resolveJobVolumes(
  app: AppContext,
  projectId: string,
  jobSpec: Pick<JobSpec, 'volumes'>,
): Promise<ResolvedJobVolumes> {
  const mountPoints = jobSpec.volumes ?? [];
  const names = mountPoints.filter(isVolumeMount).flatMap((mount) => [mount.name].flat());
  const rows =
    names.length === 0
      ? []
      : await app.db
          .selectFrom('volumes')
          .selectAll()
          .where('project_id', '=', projectId)
          .where('name', 'in', names)
          .where('deleted', '=', 0)
          .where('to_be_deleted', '=', 0)
          .execute();
  const mounts: ResolvedMount[] = [];
  for (const mount of mountPoints.filter(isVolumeMount)) {
    const mountNames = [mount.name].flat();
    const volumes: VolumesTable[] = [];
    for (const name of mountNames) {
      const row = rows.find((candidate) => candidate.name === name);
      if (!row) throw new JobVolumeError(`volume ${name} not found`);
      if (row.status !== 'active') {
        throw new JobVolumeError(`volume ${name} is ${row.status}: only active volumes can be mounted`);
      }
      volumes.push(row);
    }
    mounts.push({ path: mount.path, names: mountNames, volumes });
  }
  return { mounts, instanceMounts: mountPoints.filter(isInstanceMount) };
}

interface VolumeLocation {
  backend: string;
  region: string;
  zone: string | null;
}

function locationOf(volume: VolumesTable): VolumeLocation {
  const configuration = volumeConfigurationOf(volume);
  const provisioning = volumeProvisioningDataOf(volume);
  return {
    backend: provisioning?.backend ?? configuration.backend,
    region: configuration.region,
    zone: provisioning?.availability_zone ?? configuration.availability_zone ?? null,
  };
}

function intersect(sets: ReadonlyArray<ReadonlySet<string>>): Set<string> {
  const [first, ...rest] = sets;
  return new Set([...(first ?? [])].filter((value) => rest.every((set) => set.has(value))));
}

/** Whether the backend can mount volumes at a path in its jobs (`Compute.volumeMountRefusal`). */
function mountRefusalOf(backend: ProjectBackend): string | null {
  return backend.compute.volumeMountRefusal?.() ?? null;
}

/**
 * The run configuration narrowed to where the job's volumes can be mounted: the backends that
 * hold its network volumes (and can mount them), their regions and zones; for instance mounts
 * that are not optional, backends with instance volumes and SSH fleets. Offers and fleet
 * instances are then filtered by it as by the user's own `backends` and `regions`. Throws
 * `JobVolumeError` when nothing is left, saying why.
 */
export function placementForVolumes(
  configuration: RunConfiguration,
  resolved: ResolvedJobVolumes,
  backends: readonly ProjectBackend[],
  hasSshFleetHosts: boolean,
): RunConfiguration {
  const requiredInstanceMounts = resolved.instanceMounts.filter((mount) => !mount.optional);
  if (resolved.mounts.length === 0 && requiredInstanceMounts.length === 0) return configuration;
  const reasons: string[] = [];
  let allowed = [
    ...backends.map((backend) => backend.type),
    ...(hasSshFleetHosts ? [SSH_FLEET_BACKEND] : []),
  ];
  if (configuration.backends?.length) {
    const wanted = configuration.backends;
    allowed = allowed.filter((type) => wanted.includes(type));
  }
  const mountCapable = (type: string) => {
    if (type === SSH_FLEET_BACKEND) return true;
    const backend = backends.find((candidate) => candidate.type === type);
    const refusal = backend ? mountRefusalOf(backend) : 'not configured';
    if (refusal) reasons.push(`${type}: ${refusal}`);
    return refusal === null;
  };
  allowed = allowed.filter(mountCapable);
  if (requiredInstanceMounts.length > 0) {
    allowed = allowed.filter((type) => {
      const backend = backends.find((candidate) => candidate.type === type);
      const capable =
        type === SSH_FLEET_BACKEND ||
        (backend !== undefined && hasCapability(backend.compute, 'instance-volumes'));
      if (!capable) reasons.push(`${type}: no instance (host path) volumes`);
      return capable;
    });
  }
  let regions = configuration.regions;
  let zones: string[] | undefined;
  if (resolved.mounts.length > 0) {
    const locations = resolved.mounts.map((mount) => mount.volumes.map(locationOf));
    const volumeBackends = intersect(
      locations.map((list) => new Set(list.map((location) => location.backend))),
    );
    allowed = allowed.filter((type) => volumeBackends.has(type));
    const volumeRegions = intersect(
      locations.map((list) => new Set(list.map((location) => location.region))),
    );
    regions = [...volumeRegions].filter(
      (region) => !configuration.regions?.length || configuration.regions.includes(region),
    );
    const zoned = locations.filter((list) => list.every((location) => location.zone !== null));
    if (zoned.length > 0) {
      zones = [...intersect(zoned.map((list) => new Set(list.map((location) => location.zone as string))))];
      const wantedZones = configuration.availability_zones;
      if (wantedZones?.length) zones = zones.filter((zone) => wantedZones.includes(zone));
    }
    if (volumeBackends.size === 0 || regions.length === 0 || zones?.length === 0) {
      reasons.push(
        'the volumes it mounts are in different backends, regions or zones (or outside its regions or availability_zones)',
      );
      allowed = [];
    }
  }
  if (allowed.length === 0) {
    throw new JobVolumeError(
      `no backend can run the job with its volumes${reasons.length > 0 ? `: ${[...new Set(reasons)].join('; ')}` : ''}`,
    );
  }
  return {
    ...configuration,
    backends: allowed,
    regions: regions?.length ? regions : configuration.regions,
    ...(zones ? { availability_zones: zones } : {}),
  };
}

/** Whether the project has SSH fleet hosts (which mount instance paths), for `placementForVolumes`. */
export async function projectHasSshFleetHosts(app: AppContext, projectId: string): Promise<boolean> {
  const host = await app.db
    .selectFrom('instances')
    .select('id')
    .where('project_id', '=', projectId)
    .where('backend', '=', SSH_FLEET_BACKEND)
    .where('deleted', '=', 0)
    .where('status', 'not in', ['terminating', 'terminated'])
    .executeTakeFirst();
  return host !== undefined;
}

/** The Compute of a volume's backend, when the project has it with the `volumes` capability. */
function volumeCompute(backends: readonly ProjectBackend[], volume: VolumesTable): ComputeWithVolumes | null {
  const found = volumeComputeAmong(backends, locationOf(volume).backend);
  return 'compute' in found ? found.compute : null;
}

/**
 * Why the job cannot have its volumes now because another instance holds them (a backend that
 * attaches a volume to one instance at a time), naming the run; null when it can. Checked before
 * any capacity is bought for the job; attaching checks again under the volume's lock.
 */
export async function volumesHeldElsewhere(
  app: AppContext,
  resolved: ResolvedJobVolumes,
  backends: readonly ProjectBackend[],
): Promise<string | null> {
  for (const mount of resolved.mounts) {
    const held: string[] = [];
    for (const volume of mount.volumes) {
      const holder = await exclusiveHolder(app, volume, backends, null);
      if (holder) held.push(holder);
    }
    if (held.length === mount.volumes.length) return held.join('; ');
  }
  return null;
}

/** The run (and instance) holding an exclusive volume on another instance than `instanceId`, or null. */
async function exclusiveHolder(
  app: AppContext,
  volume: VolumesTable,
  backends: readonly ProjectBackend[],
  instanceId: string | null,
): Promise<string | null> {
  const compute = volumeCompute(backends, volume);
  const [model] = await volumesOf(app, [volume]);
  if (compute?.allowsMultiAttach?.(model as Volume)) return null;
  const holders = await app.db
    .selectFrom('volume_attachments')
    .innerJoin('instances', 'instances.id', 'volume_attachments.instance_id')
    .leftJoin('jobs', 'jobs.id', 'volume_attachments.job_id')
    .select([
      'volume_attachments.instance_id as instance_id',
      'instances.name as instance_name',
      'jobs.run_name as run_name',
    ])
    .where('volume_attachments.volume_id', '=', volume.id)
    .execute();
  const other = holders.find((holder) => holder.instance_id !== instanceId);
  if (!other) return null;
  const by = other.run_name
    ? `run ${other.run_name} (instance ${other.instance_name})`
    : `instance ${other.instance_name}`;
  return `volume ${volume.name} is attached to ${by}; its backend attaches a volume to one instance at a time`;
}

/** What the shim's task gets: the attached volumes, where they go, and the instance mounts. */
export interface TaskMounts {
  volumes: TaskVolume[];
  volume_mounts: TaskVolumeMount[];
  instance_mounts: TaskInstanceMount[];
  /** The names of the volumes attached (the job's runtime data `volume_names`). */
  volumeNames: string[];
}

/** Whether a volume in `location` can be attached to the instance the provisioning data describes. */
function servesInstance(location: VolumeLocation, provisioningData: JobProvisioningData): boolean {
  if (location.backend !== provisioningData.backend || location.region !== provisioningData.region)
    return false;
  return (
    location.zone === null ||
    provisioningData.availability_zone == null ||
    location.zone === provisioningData.availability_zone
  );
}

export interface JobOnInstance {
  projectId: string;
  jobId: string;
  jobSpec: JobSpec;
  instance: InstancesTable;
  provisioningData: JobProvisioningData;
}

/**
 * Attaches the job's network volumes to its instance (for each mount point the first of its
 * volumes that is in the instance's backend, region and zone) and returns what the shim's task
 * mounts. Throws `JobVolumeError` when a volume cannot be had (gone, held by another instance,
 * not in the instance's place, the provider refused); attachments already recorded stay for the
 * job's end to detach. Repeating it for the same job (a retried pass) attaches nothing twice.
 */
export async function attachJobVolumes(app: AppContext, target: JobOnInstance): Promise<TaskMounts> {
  const resolved = await resolveJobVolumes(app, target.projectId, target.jobSpec);
  const backends = await app.backends.getProjectBackends(target.projectId);
  const instanceBackend = backends.find((backend) => backend.type === target.provisioningData.backend);
  const hostPaths =
    target.provisioningData.backend === SSH_FLEET_BACKEND ||
    (instanceBackend !== undefined && hasCapability(instanceBackend.compute, 'instance-volumes'));
  const mounts: TaskMounts = {
    volumes: [],
    volume_mounts: [],
    // Optional instance mounts are left out where the backend has no instance volumes (dstack's `optional`).
    instance_mounts: resolved.instanceMounts
      .filter((mount) => hostPaths || !mount.optional)
      .map((mount) => ({ instance_path: mount.instance_path, path: mount.path, optional: mount.optional })),
    volumeNames: [],
  };
  for (const mount of resolved.mounts) {
    const volume = mount.volumes.find((candidate) =>
      servesInstance(locationOf(candidate), target.provisioningData),
    );
    if (!volume) {
      throw new JobVolumeError(
        `none of the volumes ${mount.names.join(', ')} is in the instance's backend, region and zone (${target.provisioningData.backend}, ${target.provisioningData.region}, ${target.provisioningData.availability_zone ?? 'any zone'})`,
      );
    }
    const attachment = await attachVolume(app, target, backends, volume);
    mounts.volumes.push(attachment.taskVolume);
    mounts.volume_mounts.push({ name: volume.name, path: mount.path });
    mounts.volumeNames.push(volume.name);
  }
  return mounts;
}

async function attachVolume(
  app: AppContext,
  target: JobOnInstance,
  backends: readonly ProjectBackend[],
  volume: VolumesTable,
): Promise<{ taskVolume: TaskVolume }> {
  const compute = volumeCompute(backends, volume);
  if (!compute) throw new JobVolumeError(`volume ${volume.name}: its backend is not in the project anymore`);
  const holder = await exclusiveHolder(app, volume, backends, target.instance.id);
  if (holder) throw new JobVolumeError(holder);
  // Recorded first, under the volume's lock: a deletion decided meanwhile wins, and the job's
  // end detaches whatever the provider call below may have done.
  const recorded = await app.db.transaction().execute(async (transaction) => {
    const current = await lockVolumeRow(transaction, app.dialect, volume.id);
    if (!current || current.deleted === 1 || current.to_be_deleted === 1) return 'gone' as const;
    const existing = await transaction
      .selectFrom('volume_attachments')
      .selectAll()
      .where('volume_id', '=', volume.id)
      .where('instance_id', '=', target.instance.id)
      .executeTakeFirst();
    if (existing && existing.job_id !== target.jobId) return 'held' as const;
    if (!existing) {
      await transaction
        .insertInto('volume_attachments')
        .values({
          volume_id: volume.id,
          instance_id: target.instance.id,
          job_id: target.jobId,
          attachment_data: null,
          created_at: Date.now(),
          detach_requested_at: null,
        })
        .execute();
    }
    await transaction
      .updateTable('volumes')
      .set({ last_job_processed_at: Date.now() })
      .where('id', '=', volume.id)
      .execute();
    return existing ? ('again' as const) : ('recorded' as const);
  });
  if (recorded === 'gone') throw new JobVolumeError(`volume ${volume.name} was deleted`);
  if (recorded === 'held') {
    throw new JobVolumeError(`volume ${volume.name} is attached to the instance for another job`);
  }
  const [model] = (await volumesOf(app, [volume])) as [Volume];
  const provisioning = volumeProvisioningDataOf(volume);
  let deviceName: string | null = null;
  if (provisioning?.attachable !== false && compute.attachVolume) {
    try {
      const data = await compute.attachVolume(model, target.provisioningData);
      deviceName = data.device_name ?? null;
      await app.db
        .updateTable('volume_attachments')
        .set({ attachment_data: volumeAttachmentDataColumn.encode(data) })
        .where('volume_id', '=', volume.id)
        .where('instance_id', '=', target.instance.id)
        .execute();
    } catch (error) {
      throw new JobVolumeError(`attaching volume ${volume.name} failed: ${errorMessage(error)}`);
    }
  }
  const configuration = volumeConfigurationOf(volume);
  return {
    taskVolume: {
      backend: locationOf(volume).backend,
      name: volume.name,
      volume_id: provisioning?.volume_id ?? '',
      // Formatted on first use only, and never a registered volume (its data is the user's), as dstack.
      init_fs: externalVolumeId(configuration) === undefined,
      device_name: deviceName,
    },
  };
}

/**
 * Detaches the volumes attached for the job (its end, however it ended): asks the provider once,
 * then looks until it says the volume is detached, forcing the detach when that takes too long.
 * Returns true once none is left attached for the job; false means look again soon.
 */
export async function detachJobVolumes(app: AppContext, jobId: string, projectId: string): Promise<boolean> {
  const attachments = await app.db
    .selectFrom('volume_attachments')
    .innerJoin('volumes', 'volumes.id', 'volume_attachments.volume_id')
    .leftJoin('instances', 'instances.id', 'volume_attachments.instance_id')
    .selectAll('volume_attachments')
    .select(['instances.job_provisioning_data as instance_provisioning_data'])
    .where('volume_attachments.job_id', '=', jobId)
    .execute();
  if (attachments.length === 0) return true;
  const backends = await app.backends.getProjectBackends(projectId);
  let done = true;
  for (const attachment of attachments) {
    const volume = await app.db
      .selectFrom('volumes')
      .selectAll()
      .where('id', '=', attachment.volume_id)
      .executeTakeFirstOrThrow();
    const detached = await detachOne(app, backends, volume, attachment).catch((error: unknown) => {
      console.error(`[volumes] detaching ${volume.name} failed: ${errorMessage(error)}`);
      const since = attachment.detach_requested_at ?? Date.now();
      return Date.now() - since > GIVE_UP_DETACH_AFTER_MS;
    });
    if (detached) {
      await forgetAttachment(app, attachment.volume_id, attachment.instance_id);
    } else {
      done = false;
    }
  }
  return done;
}

async function detachOne(
  app: AppContext,
  backends: readonly ProjectBackend[],
  volume: VolumesTable,
  attachment: {
    volume_id: string;
    instance_id: string;
    detach_requested_at: number | null;
    instance_provisioning_data: string | null;
  },
): Promise<boolean> {
  const compute = volumeCompute(backends, volume);
  const provisioning = volumeProvisioningDataOf(volume);
  const instanceData = attachment.instance_provisioning_data
    ? instanceProvisioningDataOf({
        id: attachment.instance_id,
        job_provisioning_data: attachment.instance_provisioning_data,
      })
    : null;
  // Nothing the server can detach: the provider detaches it with the instance, or never attached it.
  if (!compute?.detachVolume || provisioning?.detachable === false || instanceData === null) return true;
  const [model] = (await volumesOf(app, [volume])) as [Volume];
  const now = Date.now();
  if (attachment.detach_requested_at === null) {
    await app.db
      .updateTable('volume_attachments')
      .set({ detach_requested_at: now })
      .where('volume_id', '=', attachment.volume_id)
      .where('instance_id', '=', attachment.instance_id)
      .execute();
    await compute.detachVolume(model, instanceData, { force: false });
  }
  if (!compute.isVolumeDetached || (await compute.isVolumeDetached(model, instanceData))) return true;
  if (now - (attachment.detach_requested_at ?? now) > FORCE_DETACH_AFTER_MS) {
    await compute.detachVolume(model, instanceData, { force: true });
    return true;
  }
  return false;
}

async function forgetAttachment(app: AppContext, volumeId: string, instanceId: string): Promise<void> {
  await app.db
    .deleteFrom('volume_attachments')
    .where('volume_id', '=', volumeId)
    .where('instance_id', '=', instanceId)
    .execute();
  await app.db
    .updateTable('volumes')
    .set({ last_job_processed_at: Date.now() })
    .where('id', '=', volumeId)
    .execute();
}
