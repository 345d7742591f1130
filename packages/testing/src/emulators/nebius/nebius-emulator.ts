/**
 * The Nebius emulator: a gRPC server on loopback (plaintext) serving Nebius's published protos as
 * `*.api.nebius.cloud:443` do, every service at one address (`apiUrl`, a backend's `endpoint_url`
 * `http://127.0.0.1:<port>`; `url` is the HTTP control server of every emulator), so the backend's real grpc-js client runs unchanged against it.
 *
 *   nebius.iam.v1.TokenExchangeService.Exchange   a service account's RS256 JWT (kid = public key ID,
 *                                                iss = sub = account ID, Nebius's audience) → Bearer IAM token
 *   nebius.iam.v1.TenantService.List, ProjectService.List/Get     one tenant, projects by region
 *   nebius.vpc.v1.SubnetService.List               each project's `default-subnet-…`
 *   nebius.compute.v1.PlatformService.List         platforms and presets
 *   nebius.compute.v1.DiskService.Create/Get/GetByName/Delete boot disks from an image family
 *   nebius.compute.v1.InstanceService.Create/Get/GetByName/List/Delete
 *   nebius.compute.v1.GpuClusterService.Create/Get/Delete      InfiniBand clusters on a region's fabrics
 *   nebius.common.v1.OperationService.Get          the long-running Operations those return
 *   nebius.billing.v1alpha1.CalculatorService.Estimate        an instance spec's hourly price
 *
 * Instances go CREATING → STARTING → RUNNING (with hosts: once the host is up; its address is the
 * interface's public and private IP), DELETING → gone; an instance needs its boot disk READY, and
 * a disk attached to an instance cannot be deleted. `preemptInstance` preempts a preemptible one as
 * Nebius documents it (`on_preemption: STOP`, the only policy): Compute stops the VM without
 * deleting or restarting it, STOPPING → STOPPED, its host gone; `Get` still answers it, with its boot
 * disk attached and a static public address kept (a dynamic one is released), until it is deleted. With `hosts`, an instance boots a host of
 * Nebius's Ubuntu + CUDA image (Docker included) that runs the spec's cloud-init user data.
 */
import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { json } from '../../emulator/emulator-responses.js';
import { startEmulatorServer } from '../../emulator/emulator-server.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import {
  DEFAULT_NEBIUS_FABRICS,
  DEFAULT_NEBIUS_PLATFORMS,
  DEFAULT_NEBIUS_PROJECTS,
  DEFAULT_NEBIUS_TENANT_ID,
  type NebiusPlatformSpec,
  type NebiusProjectSpec,
} from './nebius-emulator-data.js';
import {
  type ActiveNebiusFault,
  NebiusEmulatorFaults,
  type NebiusFault,
  parseNebiusFault,
} from './nebius-emulator-faults.js';
import { nebiusEmulatorPackageDefinition } from './nebius-emulator-protos.js';

const TOKEN_AUDIENCE = 'token-service.iam.new.nebiuscloud.net';

export interface NebiusEmulatorTimeline {
  /** A disk's create Operation is done (disk READY) after this. Default 100. */
  diskMs: number;
  /** CREATING → STARTING after this. Default 100. */
  creatingMs: number;
  /** STARTING → RUNNING after this more (with hosts, also not before the host is up). Default 200. */
  startingMs: number;
  /** DELETING → gone after this. Default 200. */
  deletingMs: number;
  /** A preempted instance's STOPPING → STOPPED after this. Default 200. */
  stoppingMs: number;
}

export const DEFAULT_NEBIUS_EMULATOR_TIMELINE: NebiusEmulatorTimeline = {
  diskMs: 100,
  creatingMs: 100,
  startingMs: 200,
  deletingMs: 200,
  stoppingMs: 200,
};

export interface NebiusServiceAccountKey {
  serviceAccountId: string;
  publicKeyId: string;
  /** PEM (PKCS#8): what the backend's `private_key_content` is. */
  privateKey: string;
}

export interface NebiusEmulatorOptions {
  host?: string;
  port?: number;
  projects?: readonly NebiusProjectSpec[];
  platforms?: readonly NebiusPlatformSpec[];
  /** InfiniBand fabrics by platform and region. Default `DEFAULT_NEBIUS_FABRICS`. */
  fabrics?: ReadonlyArray<{ name: string; platform: string; region: string }>;
  hosts?: EmulatedHosts;
  timeline?: Partial<NebiusEmulatorTimeline>;
  faults?: readonly NebiusFault[];
  /** IAM tokens' lifetime in seconds. Default 43200 (Nebius's 12 hours). */
  tokenLifetimeSeconds?: number;
}

type InstanceState = 'CREATING' | 'STARTING' | 'RUNNING' | 'STOPPING' | 'STOPPED' | 'DELETING' | 'ERROR';

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

export interface NebiusEmulatorState {
  readonly provider: 'nebius';
  readonly instances: readonly {
    id: string;
    name: string;
    state: InstanceState;
    region: string;
    platform: string;
    preset: string;
    preemptible: boolean;
    bootDiskId: string;
    labels: Record<string, string>;
    gpuClusterId: string | null;
  }[];
  readonly disks: readonly { id: string; name: string; attachedTo: string | null }[];
  readonly gpuClusters: readonly { id: string; name: string; fabric: string; instances: string[] }[];
}

export interface NebiusEmulator extends BackendEmulator {
  /** The HTTP control server beside the API: `GET /_emulator/state`, `/_emulator/faults`. */
  readonly url: string;
  /** The gRPC API, `http://127.0.0.1:<port>` (plaintext): a backend's `endpoint_url`. */
  readonly apiUrl: string;
  readonly serviceAccount: NebiusServiceAccountKey;
  readonly regions: readonly string[];
  addFault(fault: NebiusFault): ActiveNebiusFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveNebiusFault[];
  failNextLaunchWithNoCapacity(count?: number): void;
  removeInstance(instanceId: string): Promise<void>;
  /**
   * Preempts a preemptible instance now, as Compute does to reclaim its capacity: it stops
   * (STOPPING → STOPPED), its host goes, and it stays until deleted. Throws for a regular instance
   * or one not STARTING or RUNNING. Also `POST /_emulator/instances/:id/preempt`.
   */
  preemptInstance(instanceId: string): void;
  launchedMachineCount(): number;
  state(): NebiusEmulatorState;
  close(): Promise<void>;
}

/** A gRPC error as Nebius answers it. */
class RpcError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

function nebiusId(prefix: string): string {
  return `${prefix}-e00${randomBytes(9).toString('hex').slice(0, 17)}`;
}

/** Whether the instance's first interface asked for a static public address (kept while it is stopped). */
function hasStaticPublicAddress(instance: { spec: Record<string, unknown> }): boolean {
  const interfaces = instance.spec.network_interfaces as
    | Array<{ public_ip_address?: { static?: boolean } | null }>
    | undefined;
  return interfaces?.[0]?.public_ip_address?.static === true;
}

function timestamp(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

/** The JWT's claims when its RS256 signature verifies with `publicKey`; else an RpcError. */
function verifyJwt(
  jwt: string,
  publicKeys: Map<string, string>,
): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [header64, claims64, signature64] = jwt.split('.');
  if (!header64 || !claims64 || !signature64)
    throw new RpcError(grpc.status.UNAUTHENTICATED, 'malformed subject token');
  const decode = (part: string) =>
    JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  const header = decode(header64);
  const claims = decode(claims64);
  const key = typeof header.kid === 'string' ? publicKeys.get(header.kid) : undefined;
  if (header.alg !== 'RS256' || key === undefined)
    throw new RpcError(grpc.status.UNAUTHENTICATED, 'unknown public key');
  const valid = createVerify('RSA-SHA256')
    .update(`${header64}.${claims64}`)
    .verify(key, Buffer.from(signature64, 'base64url'));
  if (!valid) throw new RpcError(grpc.status.UNAUTHENTICATED, 'invalid signature of the subject token');
  return { header, claims };
}

export async function startNebiusEmulator(options: NebiusEmulatorOptions = {}): Promise<NebiusEmulator> {
  const timeline = { ...DEFAULT_NEBIUS_EMULATOR_TIMELINE, ...options.timeline };
  const projects = options.projects ?? DEFAULT_NEBIUS_PROJECTS;
  const platforms = options.platforms ?? DEFAULT_NEBIUS_PLATFORMS;
  const fabrics = options.fabrics ?? DEFAULT_NEBIUS_FABRICS;
  const hosts = options.hosts;
  const lifetime = options.tokenLifetimeSeconds ?? 43_200;
  const faults = new NebiusEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serviceAccount: NebiusServiceAccountKey = {
    serviceAccountId: 'serviceaccount-e00emulator',
    publicKeyId: 'publickey-e00emulator',
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
  const publicKeys = new Map([
    [serviceAccount.publicKeyId, publicKey.export({ type: 'spki', format: 'pem' }).toString()],
  ]);
  const tokens = new Map<string, number>();
  const disks = new Map<string, EmulatedDisk>();
  const instances = new Map<string, EmulatedInstance>();
  const operations = new Map<string, EmulatedOperation>();
  const gpuClusters = new Map<string, { id: string; name: string; projectId: string; fabric: string }>();
  const clusterOf = (instance: EmulatedInstance): string | null =>
    ((instance.spec.gpu_cluster as { id?: string } | null | undefined)?.id || null) ?? null;
  let launched = 0;

  const subnetOf = (project: NebiusProjectSpec) => ({
    metadata: {
      id: `vpcsubnet-${project.id.slice(8)}`,
      parent_id: project.id,
      name: `default-subnet-${project.region}`,
    },
    spec: {},
    status: {},
  });
  const projectView = (project: NebiusProjectSpec) => ({
    metadata: { id: project.id, parent_id: DEFAULT_NEBIUS_TENANT_ID, name: project.name },
    spec: { region: project.region },
    status: { region: project.region, container_state: 'ACTIVE' },
  });

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
      created_by: serviceAccount.serviceAccountId,
      resource_id: op.resourceId,
      ...(done
        ? { finished_at: timestamp(doneAt), status: op.failure ?? { code: 0, message: '' } }
        : { status: null }),
    };
  }

  function authenticate(call: grpc.ServerUnaryCall<unknown, unknown>): void {
    const bearer = /^Bearer\s+(.+)$/i.exec(String(call.metadata.get('authorization')[0] ?? ''))?.[1];
    const expiresAt = bearer === undefined ? undefined : tokens.get(bearer);
    if (expiresAt === undefined || expiresAt <= Date.now() || faults.fire('INVALID_CREDENTIALS')) {
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'invalid or expired access token');
    }
  }

  function projectOf(parentId: unknown): NebiusProjectSpec {
    const project = projects.find((each) => each.id === parentId);
    if (!project) throw new RpcError(grpc.status.NOT_FOUND, `project ${String(parentId)} not found`);
    return project;
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js hands over proto-loader's decoded messages untyped; each handler checks what it reads
  type Request = Record<string, any>;
  const handlers: Record<string, Record<string, (request: Request) => unknown>> = {
    'nebius.iam.v1.TenantService': {
      List: () => ({
        items: [
          { metadata: { id: DEFAULT_NEBIUS_TENANT_ID, name: 'emulated-tenant' }, spec: {}, status: {} },
        ],
      }),
    },
    'nebius.iam.v1.ProjectService': {
      List: (request) => {
        if (request.parent_id !== DEFAULT_NEBIUS_TENANT_ID)
          throw new RpcError(grpc.status.NOT_FOUND, 'tenant not found');
        return { items: projects.map(projectView) };
      },
      Get: (request) => projectView(projectOf(request.id)),
    },
    'nebius.vpc.v1.SubnetService': {
      List: (request) => ({ items: [subnetOf(projectOf(request.parent_id))] }),
    },
    'nebius.compute.v1.PlatformService': {
      List: (request) => {
        projectOf(request.parent_id);
        return {
          items: platforms.map((platform) => ({
            metadata: {
              id: `computeplatform-${platform.name}`,
              parent_id: request.parent_id,
              name: platform.name,
            },
            spec: {
              human_readable_name: platform.humanName,
              gpu_memory_gigabytes: platform.gpuMemoryGb,
              presets: platform.presets.map((preset) => ({
                name: preset.name,
                resources: {
                  vcpu_count: preset.vcpu,
                  memory_gibibytes: preset.memoryGib,
                  gpu_count: preset.gpus,
                },
                allow_gpu_clustering: preset.clustering,
              })),
            },
            status: {
              allowed_for_preemptibles: platform.presets.every((preset) => preset.spotPrice !== null),
            },
          })),
        };
      },
    },
    'nebius.billing.v1alpha1.CalculatorService': {
      Estimate: (request) => {
        const spec = request.resource_spec?.compute_instance_spec?.spec;
        const preset = platforms
          .find((platform) => platform.name === spec?.resources?.platform)
          ?.presets.find((each) => each.name === spec?.resources?.preset);
        if (!preset) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'unknown platform or preset');
        const price = spec.preemptible ? preset.spotPrice : preset.price;
        if (price === null)
          throw new RpcError(grpc.status.INVALID_ARGUMENT, 'the platform does not allow preemptibles');
        const cost = { cost: String(price), cost_rounded: price.toFixed(2) };
        return {
          hourly_cost: { general: { total: cost } },
          monthly_cost: {
            general: { total: { cost: String(price * 720), cost_rounded: (price * 720).toFixed(2) } },
          },
        };
      },
    },
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
          madeUpIp: `127.79.${Math.floor(launched / 250) % 250}.${(launched % 250) + 2}`,
        };
        instances.set(id, instance);
        if (hosts) {
          instance.host = new EmulatedInstanceHost(
            hosts,
            { instanceId: id, userData: String(spec.cloud_init_user_data ?? ''), kind: 'docker' },
            (error) => {
              if (instance.deletedAt === null)
                console.error(`Nebius emulator: host of ${id} failed: ${String(error)}`);
            },
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

  function exchange(request: Request): unknown {
    if (
      request.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange' ||
      request.subject_token_type !== 'urn:ietf:params:oauth:token-type:jwt'
    ) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'grant_type: token-exchange of a jwt subject token');
    }
    if (faults.fire('INVALID_CREDENTIALS'))
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'service account credentials are invalid');
    const { claims } = verifyJwt(String(request.subject_token ?? ''), publicKeys);
    const now = Date.now() / 1000;
    if (
      claims.iss !== serviceAccount.serviceAccountId ||
      claims.sub !== claims.iss ||
      claims.aud !== TOKEN_AUDIENCE ||
      typeof claims.exp !== 'number' ||
      claims.exp < now
    ) {
      throw new RpcError(grpc.status.UNAUTHENTICATED, 'the subject token is not a valid service account JWT');
    }
    const token = `ne1${randomBytes(24).toString('hex')}`;
    tokens.set(token, Date.now() + lifetime * 1000);
    return {
      access_token: token,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: lifetime,
    };
  }

  function preempt(instanceId: string): void {
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
  }

  const definition = nebiusEmulatorPackageDefinition();
  const server = new grpc.Server();
  const serve = (
    service: string,
    methods: Record<string, (request: Request) => unknown>,
    authenticated: boolean,
  ) => {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, handle] of Object.entries(methods)) {
      implementation[method] = (
        call: grpc.ServerUnaryCall<Request, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        try {
          if (faults.fire('UNAVAILABLE')) throw new RpcError(grpc.status.UNAVAILABLE, 'service unavailable');
          if (authenticated) authenticate(call);
          callback(null, handle(call.request));
        } catch (error) {
          if (error instanceof RpcError) callback({ code: error.code, details: error.message });
          else callback({ code: grpc.status.INTERNAL, details: String(error) });
        }
      };
    }
    server.addService(definition[service] as grpc.ServiceDefinition, implementation);
  };
  serve('nebius.iam.v1.TokenExchangeService', { Exchange: exchange }, false);
  for (const [service, methods] of Object.entries(handlers)) serve(service, methods, true);

  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${host}:${options.port ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    ),
  );

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

  const control = await startEmulatorServer({
    host,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseNebiusFault }),
      {
        name: 'instances.preempt',
        method: 'POST',
        path: '/_emulator/instances/:id/preempt',
        handle: (request) => {
          try {
            const id = request.params.id ?? '';
            preempt(id);
            return json({ id, state: state().instances.find((each) => each.id === id)?.state });
          } catch (error) {
            throw controlError(error);
          }
        },
      },
    ],
  });

  return {
    url: control.url,
    apiUrl: `http://${host}:${port}`,
    serviceAccount,
    regions: [...new Set(projects.map((project) => project.region))],
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'NO_CAPACITY', count });
    },
    async removeInstance(instanceId) {
      const instance = instances.get(instanceId);
      if (!instance) throw new Error(`no instance ${instanceId}`);
      instances.delete(instanceId);
      await instance.host?.stop();
    },
    preemptInstance: preempt,
    launchedMachineCount: () => launched,
    state,
    async close() {
      await control.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await Promise.all(
        [...instances.values()].map((instance) => instance.host?.stop().catch(() => undefined)),
      );
      instances.clear();
    },
  };
}
