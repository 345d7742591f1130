/**
 * Nebius's compute in the emulator: boot disks, instances (CREATING → STARTING → RUNNING, with
 * hosts: once the host is up; DELETING → gone), InfiniBand GPU clusters, and the long-running
 * Operations their calls return; and the state `GET /_emulator/state` shows of them.
 */
import * as grpc from '@grpc/grpc-js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import { madeUpAddress } from '../made-up-address.js';
import type { NebiusPlatformSpec, NebiusProjectSpec } from './nebius-emulator-data.js';
import type { NebiusEmulatorFaults } from './nebius-emulator-faults.js';
import type { InstanceState, NebiusEmulatorState, NebiusEmulatorTimeline } from './nebius-emulator-types.js';
import { type NebiusMethods, nebiusId, RpcError, timestamp } from './nebius-rpc.js';

interface EmulatedDisk {
  id: string;
  metadata: Record<string, unknown>;
  spec: Record<string, unknown>;
  createdAt: number;
}

interface EmulatedInstance {
  id: string;
  metadata: { name: string; parent_id: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
  region: string;
  platform: string;
  preset: string;
  bootDiskId: string;
  createdAt: number;
  deletedAt: number | null;
  /** When Compute preempted it, and the address its interface had then. */
  preempted: { at: number; address: string | null } | null;
  host: EmulatedInstanceHost | undefined;
  madeUpIp: string;
}

interface EmulatedOperation {
  id: string;
  resourceId: string;
  description: string;
  createdAt: number;
  /** When it is done and how; null status = success. */
  doneAt: () => number | null;
  failure: { code: number; message: string } | null;
}

export interface NebiusComputeSettings {
  timeline: NebiusEmulatorTimeline;
  platforms: readonly NebiusPlatformSpec[];
  fabrics: ReadonlyArray<{ name: string; platform: string; region: string }>;
  hosts: EmulatedHosts | undefined;
  faults: NebiusEmulatorFaults;
  /** Who the Operations say created them. */
  serviceAccountId: string;
  /** The project of a call's `parent_id`, else NOT_FOUND. */
  projectOf(parentId: unknown): NebiusProjectSpec;
  /** The project's `default-subnet-…`. */
  subnetOf(project: NebiusProjectSpec): { metadata: { id: string } };
}

export interface NebiusCompute {
  /** The Disk, GpuCluster, Instance and Operation services' methods. */
  readonly services: Record<string, NebiusMethods>;
  state(): NebiusEmulatorState;
  /** Drops an instance as if the cloud lost it (no Operation, no DELETING). */
  removeInstance(instanceId: string): Promise<void>;
  /** See `NebiusEmulator.preemptInstance`. */
  preemptInstance(instanceId: string): void;
  launchedMachineCount(): number;
  /** Stops every instance's host. */
  close(): Promise<void>;
}

/** Whether the instance's first interface asked for a static public address (kept while it is stopped). */
function hasStaticPublicAddress(instance: { spec: Record<string, unknown> }): boolean {
  const interfaces = instance.spec.network_interfaces as
    | Array<{ public_ip_address?: { static?: boolean } | null }>
    | undefined;
  return interfaces?.[0]?.public_ip_address?.static === true;
}

export function createNebiusCompute(settings: NebiusComputeSettings): NebiusCompute {
  const { timeline, platforms, fabrics, hosts, faults, projectOf, subnetOf } = settings;
  const disks = new Map<string, EmulatedDisk>();
  const instances = new Map<string, EmulatedInstance>();
  const operations = new Map<string, EmulatedOperation>();
  const gpuClusters = new Map<string, { id: string; name: string; projectId: string; fabric: string }>();
  const clusterOf = (instance: EmulatedInstance): string | null =>
    ((instance.spec.gpu_cluster as { id?: string } | null | undefined)?.id || null) ?? null;
  let launched = 0;

  function instanceState(instance: EmulatedInstance, now = Date.now()): InstanceState | 'gone' {
    if (instance.deletedAt !== null)
      return now - instance.deletedAt >= timeline.deletingMs ? 'gone' : 'DELETING';
    if (instance.preempted !== null)
      return now - instance.preempted.at >= timeline.stoppingMs ? 'STOPPED' : 'STOPPING';
    if (instance.host?.status === 'failed') return 'ERROR';
    const age = now - instance.createdAt;
    if (age < timeline.creatingMs) return 'CREATING';
    if (age < timeline.creatingMs + timeline.startingMs) return 'STARTING';
    if (instance.host) return instance.host.status === 'up' ? 'RUNNING' : 'STARTING';
    return 'RUNNING';
  }

  function live(): EmulatedInstance[] {
    for (const instance of [...instances.values()])
      if (instanceState(instance) === 'gone') instances.delete(instance.id);
    return [...instances.values()];
  }

  function instanceView(instance: EmulatedInstance): Record<string, unknown> {
    const state = instanceState(instance);
    const address =
      state === 'RUNNING'
        ? (instance.host?.address ?? instance.madeUpIp)
        : (instance.preempted?.address ?? null);
    return {
      metadata: { id: instance.id, ...instance.metadata, created_at: timestamp(instance.createdAt) },
      spec: instance.spec,
      status: {
        state: state === 'gone' ? 'DELETING' : state,
        network_interfaces: address
          ? [
              {
                index: 0,
                name: 'dstack-default-interface',
                ip_address: { address: `${address}/32` },
                ...(state === 'RUNNING' || hasStaticPublicAddress(instance)
                  ? {
                      public_ip_address: {
                        address: `${address}/32`,
                        static: hasStaticPublicAddress(instance),
                      },
                    }
                  : {}),
              },
            ]
          : [],
        reconciling: state !== 'RUNNING',
      },
    };
  }

  function diskView(disk: EmulatedDisk): Record<string, unknown> {
    const ready = Date.now() - disk.createdAt >= timeline.diskMs;
    const attached = live().find(
      (instance) => instance.bootDiskId === disk.id && instance.deletedAt === null,
    );
    return {
      metadata: { ...disk.metadata, id: disk.id },
      spec: disk.spec,
      status: { state: ready ? 'READY' : 'CREATING', read_write_attachment: attached?.id ?? '' },
    };
  }

  function operation(
    resourceId: string,
    description: string,
    doneAt: () => number | null,
    failure: EmulatedOperation['failure'] = null,
  ): Record<string, unknown> {
    const op: EmulatedOperation = {
      id: nebiusId('computeoperation'),
      resourceId,
      description,
      createdAt: Date.now(),
      doneAt,
      failure,
    };
    operations.set(op.id, op);
    return operationView(op);
  }

  function operationView(op: EmulatedOperation): Record<string, unknown> {
    const doneAt = op.doneAt();
    const done = doneAt !== null && doneAt <= Date.now();
    return {
      id: op.id,
      description: op.description,
      created_at: timestamp(op.createdAt),
      created_by: settings.serviceAccountId,
      resource_id: op.resourceId,
      ...(done
        ? { finished_at: timestamp(doneAt), status: op.failure ?? { code: 0, message: '' } }
        : { status: null }),
    };
  }

  const services: Record<string, NebiusMethods> = {
    'nebius.compute.v1.DiskService': {
      Create: (request) => {
        const project = projectOf(request.metadata?.parent_id);
        const spec = request.spec ?? {};
        const family = spec.source_image_family?.image_family;
        if (family && !/^ubuntu\d\d\.\d\d(-cuda\d+\.\d+)?$/.test(family))
          throw new RpcError(grpc.status.NOT_FOUND, `image family ${family} not found`);
        const size = Number(spec.size_mebibytes ?? 0);
        if (size < 40 * 1024 || spec.type !== 'NETWORK_SSD')
          throw new RpcError(
            grpc.status.INVALID_ARGUMENT,
            'spec: size_mebibytes at least 40960, type NETWORK_SSD',
          );
        if (
          [...disks.values()].some(
            (each) => each.metadata.parent_id === project.id && each.metadata.name === request.metadata?.name,
          )
        ) {
          throw new RpcError(
            grpc.status.ALREADY_EXISTS,
            `disk ${String(request.metadata?.name)} already exists`,
          );
        }
        const disk: EmulatedDisk = {
          id: nebiusId('computedisk'),
          metadata: { ...request.metadata, parent_id: project.id },
          spec,
          createdAt: Date.now(),
        };
        disks.set(disk.id, disk);
        return operation(disk.id, 'create disk', () => disk.createdAt + timeline.diskMs);
      },
      Get: (request) => {
        const disk = disks.get(request.id);
        if (!disk) throw new RpcError(grpc.status.NOT_FOUND, `disk ${request.id} not found`);
        return diskView(disk);
      },
      GetByName: (request) => {
        const disk = [...disks.values()].find(
          (each) => each.metadata.parent_id === request.parent_id && each.metadata.name === request.name,
        );
        if (!disk) throw new RpcError(grpc.status.NOT_FOUND, `disk ${request.name} not found`);
        return diskView(disk);
      },
      Delete: (request) => {
        const disk = disks.get(request.id);
        if (!disk) throw new RpcError(grpc.status.NOT_FOUND, `disk ${request.id} not found`);
        if (live().some((instance) => instance.bootDiskId === disk.id)) {
          throw new RpcError(grpc.status.FAILED_PRECONDITION, `disk ${disk.id} is attached to an instance`);
        }
        disks.delete(disk.id);
        const now = Date.now();
        return operation(disk.id, 'delete disk', () => now);
      },
    },
    'nebius.compute.v1.GpuClusterService': {
      Create: (request) => {
        const project = projectOf(request.metadata?.parent_id);
        const fabric = fabrics.find((each) => each.name === request.spec?.infiniband_fabric);
        if (!fabric || fabric.region !== project.region) {
          throw new RpcError(
            grpc.status.INVALID_ARGUMENT,
            `spec.infiniband_fabric: no fabric ${String(request.spec?.infiniband_fabric)} in ${project.region}`,
          );
        }
        const cluster = {
          id: nebiusId('computegpucluster'),
          name: String(request.metadata?.name ?? ''),
          projectId: project.id,
          fabric: fabric.name,
        };
        gpuClusters.set(cluster.id, cluster);
        const now = Date.now();
        return operation(cluster.id, 'create gpu cluster', () => now);
      },
      Get: (request) => {
        const cluster = gpuClusters.get(request.id);
        if (!cluster) throw new RpcError(grpc.status.NOT_FOUND, `gpu cluster ${request.id} not found`);
        return {
          metadata: { id: cluster.id, parent_id: cluster.projectId, name: cluster.name },
          spec: { infiniband_fabric: cluster.fabric },
          status: {
            instances: live()
              .filter((each) => clusterOf(each) === cluster.id)
              .map((each) => each.id),
          },
        };
      },
      Delete: (request) => {
        const cluster = gpuClusters.get(request.id);
        if (!cluster) throw new RpcError(grpc.status.NOT_FOUND, `gpu cluster ${request.id} not found`);
        if (live().some((each) => clusterOf(each) === cluster.id)) {
          throw new RpcError(grpc.status.FAILED_PRECONDITION, `gpu cluster ${cluster.id} has instances`);
        }
        gpuClusters.delete(cluster.id);
        const now = Date.now();
        return operation(cluster.id, 'delete gpu cluster', () => now);
      },
    },
    'nebius.compute.v1.InstanceService': {
      Create: (request) => {
        const project = projectOf(request.metadata?.parent_id);
        const name = String(request.metadata?.name ?? '');
        if (
          live().some(
            (instance) =>
              instance.metadata.parent_id === project.id &&
              instance.metadata.name === name &&
              instance.deletedAt === null,
          )
        ) {
          throw new RpcError(grpc.status.ALREADY_EXISTS, `instance ${name} already exists`);
        }
        const spec = request.spec ?? {};
        const platform = platforms.find((each) => each.name === spec.resources?.platform);
        const preset = platform?.presets.find((each) => each.name === spec.resources?.preset);
        if (!platform || !preset)
          throw new RpcError(grpc.status.INVALID_ARGUMENT, 'spec.resources: unknown platform or preset');
        if (spec.preemptible && preset.spotPrice === null)
          throw new RpcError(grpc.status.INVALID_ARGUMENT, 'the platform does not allow preemptibles');
        const clusterId = spec.gpu_cluster?.id;
        if (clusterId) {
          const cluster = gpuClusters.get(clusterId);
          const fabric = fabrics.find((each) => each.name === cluster?.fabric);
          if (!cluster || cluster.projectId !== project.id)
            throw new RpcError(grpc.status.NOT_FOUND, `gpu cluster ${clusterId} not found`);
          if (fabric?.platform !== platform.name || !preset.clustering) {
            throw new RpcError(
              grpc.status.INVALID_ARGUMENT,
              `${platform.name} ${preset.name} cannot join gpu cluster ${clusterId} (${cluster.fabric})`,
            );
          }
        }
        const diskId = spec.boot_disk?.existing_disk?.id;
        const disk = disks.get(diskId);
        if (!disk || disk.metadata.parent_id !== project.id)
          throw new RpcError(grpc.status.NOT_FOUND, `boot disk ${diskId} not found`);
        if (Date.now() - disk.createdAt < timeline.diskMs)
          throw new RpcError(grpc.status.FAILED_PRECONDITION, `disk ${diskId} is not ready`);
        if (live().some((instance) => instance.bootDiskId === diskId))
          throw new RpcError(grpc.status.FAILED_PRECONDITION, `disk ${diskId} is attached`);
        const subnet = subnetOf(project).metadata.id;
        const interfaces = spec.network_interfaces ?? [];
        if (interfaces.length === 0 || interfaces[0].subnet_id !== subnet)
          throw new RpcError(
            grpc.status.INVALID_ARGUMENT,
            'spec.network_interfaces: a subnet of the project',
          );
        const target = { platform: platform.name, region: project.region };
        if (faults.fire('QUOTA_EXCEEDED', target))
          throw new RpcError(
            grpc.status.RESOURCE_EXHAUSTED,
            `Quota limit exceeded: ${platform.name} in ${project.region}`,
          );
        const id = nebiusId('computeinstance');
        if (faults.fire('NO_CAPACITY', target)) {
          // Nebius accepts the create, then its Operation fails: the instance is never made.
          const failedAt = Date.now() + timeline.creatingMs;
          return operation(id, 'create instance', () => failedAt, {
            code: grpc.status.RESOURCE_EXHAUSTED,
            message: `not enough resources: ${platform.name} ${preset.name} in ${project.region}`,
          });
        }
        launched += 1;
        const instance: EmulatedInstance = {
          id,
          metadata: { name, parent_id: project.id, labels: request.metadata?.labels ?? {} },
          spec,
          region: project.region,
          platform: platform.name,
          preset: preset.name,
          bootDiskId: diskId,
          createdAt: Date.now(),
          deletedAt: null,
          preempted: null,
          host: undefined,
          madeUpIp: madeUpAddress('127.79', launched),
        };
        instances.set(id, instance);
        if (hosts) {
          instance.host = new EmulatedInstanceHost(
            hosts,
            { instanceId: id, userData: String(spec.cloud_init_user_data ?? ''), kind: 'docker' },
            (error) => console.error(`Nebius emulator: host of ${id} failed: ${String(error)}`),
          );
        }
        return operation(id, 'create instance', () => {
          const state = instanceState(instance);
          return state === 'RUNNING' || state === 'STARTING'
            ? instance.createdAt + timeline.creatingMs
            : null;
        });
      },
      Get: (request) => {
        live();
        const instance = instances.get(request.id);
        if (!instance) throw new RpcError(grpc.status.NOT_FOUND, `instance ${request.id} not found`);
        return instanceView(instance);
      },
      GetByName: (request) => {
        const instance = live().find(
          (each) => each.metadata.parent_id === request.parent_id && each.metadata.name === request.name,
        );
        if (!instance) throw new RpcError(grpc.status.NOT_FOUND, `instance ${request.name} not found`);
        return instanceView(instance);
      },
      List: (request) => ({
        items: live()
          .filter((each) => each.metadata.parent_id === request.parent_id)
          .map(instanceView),
      }),
      Delete: (request) => {
        live();
        const instance = instances.get(request.id);
        if (!instance) throw new RpcError(grpc.status.NOT_FOUND, `instance ${request.id} not found`);
        instance.deletedAt ??= Date.now();
        void instance.host
          ?.stop()
          .catch((error: unknown) =>
            console.error(`Nebius emulator: cannot stop the host of ${instance.id}: ${String(error)}`),
          );
        const deletedAt = instance.deletedAt;
        return operation(instance.id, 'delete instance', () => deletedAt + timeline.deletingMs);
      },
    },
    'nebius.common.v1.OperationService': {
      Get: (request) => {
        const op = operations.get(request.id);
        if (!op) throw new RpcError(grpc.status.NOT_FOUND, `operation ${request.id} not found`);
        return operationView(op);
      },
    },
  };

  const state = (): NebiusEmulatorState => ({
    provider: 'nebius',
    instances: live().map((instance) => ({
      id: instance.id,
      name: instance.metadata.name,
      state: instanceState(instance) as InstanceState,
      region: instance.region,
      platform: instance.platform,
      preset: instance.preset,
      preemptible: instance.spec.preemptible != null,
      bootDiskId: instance.bootDiskId,
      labels: instance.metadata.labels,
      gpuClusterId: clusterOf(instance),
    })),
    disks: [...disks.values()].map((disk) => ({
      id: disk.id,
      name: String(disk.metadata.name ?? ''),
      attachedTo: live().find((instance) => instance.bootDiskId === disk.id)?.id ?? null,
    })),
    gpuClusters: [...gpuClusters.values()].map((cluster) => ({
      id: cluster.id,
      name: cluster.name,
      fabric: cluster.fabric,
      instances: live()
        .filter((each) => clusterOf(each) === cluster.id)
        .map((each) => each.id),
    })),
  });

  return {
    services,
    state,
    async removeInstance(instanceId) {
      const instance = instances.get(instanceId);
      if (!instance) throw new Error(`no instance ${instanceId}`);
      instances.delete(instanceId);
      await instance.host?.stop();
    },
    preemptInstance(instanceId) {
      live();
      const instance = instances.get(instanceId);
      if (!instance) throw new Error(`no instance ${instanceId}`);
      if (instance.spec.preemptible == null) throw new Error(`${instanceId} is not a preemptible instance`);
      const state = instanceState(instance);
      if (state !== 'STARTING' && state !== 'RUNNING') {
        throw new Error(
          `${instanceId} is ${state}; only a starting or running preemptible instance is preempted`,
        );
      }
      const address = state === 'RUNNING' ? (instance.host?.address ?? instance.madeUpIp) : null;
      instance.preempted = { at: Date.now(), address };
      void instance.host
        ?.stop()
        .catch((error: unknown) =>
          console.error(`Nebius emulator: cannot stop the host of ${instance.id}: ${String(error)}`),
        );
    },
    launchedMachineCount: () => launched,
    async close() {
      await Promise.all(
        [...instances.values()].map((instance) => instance.host?.stop().catch(() => undefined)),
      );
      instances.clear();
    },
  };
}
