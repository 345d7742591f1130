import { type Catalog, defaultCatalog } from '@dstack/catalog';
import {
  BackendApiCallError,
  buildVmUserData,
  type Capability,
  type ComputeWithCreateInstance,
  type ComputeWithInstanceVolumes,
  type ComputeWithMultinode,
  type ComputeWithPlacementGroups,
  type ComputeWithPrivileged,
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOffer,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  mergeTags,
  NotYetTerminatedError,
  OffersCache,
  type PlacementGroup,
  type PlacementGroupProvisioningData,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  withAvailability,
} from '@dstack/core';
import * as grpc from '@grpc/grpc-js';
import { NebiusApi, NebiusApiFailure, type NebiusOperation, typedNebiusError } from './nebius-api.js';
import { NEBIUS_BACKEND_TYPE, type NebiusConfig } from './nebius-config.js';
import { regionToProjectId } from './nebius-projects.js';

/**
 * dstack's: fleets, privileged runs, instance volumes, multinode (instances of a project's subnet
 * reach each other) and cluster placement groups (InfiniBand GPU clusters).
 */
export const NEBIUS_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
  'multinode',
  'placement-groups',
];

/** dstack's: 40 GB (the image's minimum) to 8192 GB (a NETWORK_SSD's maximum). */
export const NEBIUS_CONFIGURABLE_DISK_SIZE = { min: 40, max: 8192 };
/** dstack's boot image family. */
export const NEBIUS_IMAGE_FAMILY = 'ubuntu24.04-cuda13.0';
/** The platforms dstack launches (`SUPPORTED_PLATFORMS`). */
export const NEBIUS_SUPPORTED_PLATFORMS: ReadonlySet<string> = new Set([
  'gpu-h100-sxm',
  'gpu-h200-sxm',
  'gpu-b200-sxm',
  'gpu-b200-sxm-a',
  'gpu-l40s-a',
  'gpu-l40s-d',
  'gpu-rtx6000',
  'cpu-d3',
  'cpu-e2',
]);
/**
 * dstack's Docker daemon settings on Nebius's image: the NVIDIA runtime, and the cgroupfs driver
 * (a workaround for NVIDIA/nvidia-container-toolkit#48), as `json.dumps` writes them.
 */
const NEBIUS_DOCKER_DAEMON_CONFIG =
  '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}, "exec-opts": ["native.cgroupdriver=cgroupfs"]}';
/**
 * dstack's `SETUP_COMMANDS`, run by the user data before the shim: sshd allows TCP forwarding (the
 * image turns it off), and Docker gets the daemon settings above.
 */
export const NEBIUS_SETUP_COMMANDS: readonly string[] = [
  'sed -i "s/.*AllowTcpForwarding.*/AllowTcpForwarding yes/g" /etc/ssh/sshd_config',
  'service ssh restart',
  `echo '${NEBIUS_DOCKER_DAEMON_CONFIG}' > /etc/docker/daemon.json`,
  'service docker restart',
];
const MAX_RESOURCE_NAME_LENGTH = 63;
/** dstack's waits: the boot disk's operation, then the instance reaching STARTING or RUNNING. */
const WAIT_FOR_DISK_MS = 20_000;
const WAIT_FOR_INSTANCE_MS = 30_000;
/** Nebius labels: GCP's rules, as dstack applies them. */
const LABEL_KEY = /^[a-z][_\-a-z0-9]{0,62}$/;
const LABEL_VALUE = /^[_\-a-z0-9]{0,63}$/;

/** What `backend_data` keeps: the boot disk, deleted after the instance. */
interface NebiusInstanceBackendData {
  boot_disk_id: string;
}

/** A placement group's `backend_data`: its GPU cluster, or none when the offer has no fabric (dstack's). */
interface NebiusPlacementGroupBackendData {
  cluster: { id: string; fabric: string } | null;
}

/** The InfiniBand fabrics of an offer (the catalog row's `provider_data.fabrics`). */
function offerFabrics(offer: InstanceOffer): string[] {
  const fabrics = (offer.backend_data as { fabrics?: unknown } | null | undefined)?.fabrics;
  return Array.isArray(fabrics) ? fabrics.filter((each): each is string => typeof each === 'string') : [];
}

function placementGroupData(placementGroup: PlacementGroup): NebiusPlacementGroupBackendData {
  const raw = placementGroup.provisioning_data?.backend_data;
  if (!raw) return { cluster: null };
  try {
    return { cluster: (JSON.parse(raw) as Partial<NebiusPlacementGroupBackendData>).cluster ?? null };
  } catch {
    return { cluster: null };
  }
}

export interface NebiusBackendSettings {
  config: NebiusConfig;
  catalog?: Catalog;
  /** Default 180 s (dstack's). */
  offersCacheMs?: number;
  /**
   * The longest wait between polls of an operation or instance while launching. Default 1000 ms
   * (dstack's interval); the first polls come sooner (100 ms, doubling), as most operations are quick.
   */
  pollIntervalMs?: number;
}

/** The labels Nebius accepts of `labels` (dstack drops the others with a warning). */
export function validNebiusLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(labels).filter(([key, value]) => LABEL_KEY.test(key) && LABEL_VALUE.test(value)),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function ignoreNotFound(error: unknown): void {
  if (!(error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND))
    throw typedNebiusError(error);
}

/**
 * Runs jobs on Nebius VMs as dstack does: a NETWORK_SSD boot disk from the
 * `ubuntu24.04-cuda13.0` image family, then an instance of the offer's platform and preset on the
 * project's `default-subnet…` with a static public IP, whose cloud-init user data authorizes the
 * keys, runs dstack's Nebius setup commands and starts the shim (core's `buildVmUserData`, as AWS). Both are waited for as dstack does
 * (capacity and quota errors come late); a failed launch deletes what it made. Termination deletes
 * the instance, then (a later call, `NotYetTerminatedError` until then) the boot disk.
 */
export class NebiusCompute
  implements
    ComputeWithCreateInstance,
    ComputeWithPrivileged,
    ComputeWithInstanceVolumes,
    ComputeWithMultinode,
    ComputeWithPlacementGroups
{
  readonly type = NEBIUS_BACKEND_TYPE;
  readonly capabilities = NEBIUS_CAPABILITIES;
  readonly config: NebiusConfig;
  readonly #api: NebiusApi;
  readonly #catalog: Catalog | undefined;
  readonly #offers: OffersCache;
  readonly #pollIntervalMs: number;
  #projects: Promise<Map<string, string>> | undefined;
  readonly #subnets = new Map<string, string>();

  constructor(settings: NebiusBackendSettings) {
    this.config = settings.config;
    const creds = settings.config.creds;
    this.#api = new NebiusApi({
      serviceAccountId: creds.service_account_id ?? '',
      publicKeyId: creds.public_key_id ?? '',
      privateKey: creds.private_key_content ?? '',
      endpointUrl: settings.config.endpoint_url ?? undefined,
    });
    this.#catalog = settings.catalog;
    this.#offers = new OffersCache({ ttlMs: settings.offersCacheMs });
    this.#pollIntervalMs = settings.pollIntervalMs ?? 1000;
  }

  /** The project of each usable region (asked once; a failure is asked again next time). */
  #regionProjects(): Promise<Map<string, string>> {
    this.#projects ??= regionToProjectId(this.#api, this.config).catch((error: unknown) => {
      this.#projects = undefined;
      throw typedNebiusError(error);
    });
    return this.#projects;
  }

  async #projectOf(region: string): Promise<string> {
    const project = (await this.#regionProjects()).get(region);
    if (!project) throw new ProvisioningError(`No Nebius project in region ${region}`);
    return project;
  }

  async #subnetOf(projectId: string): Promise<string> {
    const cached = this.#subnets.get(projectId);
    if (cached) return cached;
    const subnet = (await this.#api.listSubnets(projectId)).find((each) =>
      each.metadata.name.startsWith('default-subnet'),
    );
    if (!subnet) throw new BackendApiCallError(`Could not find default subnet in project ${projectId}`);
    this.#subnets.set(projectId, subnet.metadata.id);
    return subnet.metadata.id;
  }

  /** The catalog's `nebius` rows of supported platforms in the usable regions; availability unknown (dstack's). */
  getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    return this.#offers.get(requirements, async () => {
      const regions = [...(await this.#regionProjects()).keys()];
      const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), NEBIUS_BACKEND_TYPE, {
        requirements,
        locations: regions,
        configurableDiskSize: NEBIUS_CONFIGURABLE_DISK_SIZE,
        extraFilter: (offer) => NEBIUS_SUPPORTED_PLATFORMS.has(offer.instance.name.split(' ')[0] ?? ''),
      });
      return offers.map((offer) => withAvailability(offer, 'unknown'));
    });
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null = null,
  ): Promise<JobProvisioningData> {
    try {
      return await this.#createInstance(offer, config, placementGroup);
    } catch (error) {
      throw typedNebiusError(error);
    }
  }

  async #createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    const name = generateUniqueBackendName(config.project_name, config.instance_name, {
      maxLength: MAX_RESOURCE_NAME_LENGTH,
      seed: config.instance_id,
    });
    const [platform, preset] = offer.instance.name.split(' ');
    const cluster = placementGroup ? placementGroupData(placementGroup).cluster : null;
    const projectId = await this.#projectOf(offer.region);
    const labels = validNebiusLabels(
      mergeTags(
        {
          owner: 'dstack',
          dstack_project: config.project_name.toLowerCase(),
          dstack_name: config.instance_name,
          dstack_user: config.user.toLowerCase(),
        },
        this.config.tags,
        config.tags,
      ),
    );
    const existing = await this.#api.getInstanceByName(projectId, name);
    if (existing) {
      // A retried launch: the instance of this name is already there.
      const diskId =
        (existing.spec.boot_disk as { existing_disk?: { id?: string } } | undefined)?.existing_disk?.id ?? '';
      return this.#provisioningData(offer, existing.metadata.id, diskId);
    }
    // A retried launch may find its boot disk made (names are unique in a project): it is reused.
    const madeDisk = await this.#api.getDiskByName(projectId, name);
    const diskOperation = madeDisk
      ? null
      : await this.#api.createDisk({
          metadata: { name, parent_id: projectId, labels },
          spec: {
            size_mebibytes: offer.instance.resources.disk.size_mib,
            type: 'NETWORK_SSD',
            source_image_family: { image_family: NEBIUS_IMAGE_FAMILY },
          },
        });
    const diskId = madeDisk?.metadata.id ?? (diskOperation as NebiusOperation).resource_id;
    let instanceId: string | undefined;
    try {
      if (diskOperation) {
        const done = await this.#waitForOperation(diskOperation, WAIT_FOR_DISK_MS);
        if (done.status && done.status.code !== 0) {
          throw new ProvisioningError(`Create disk operation failed. Message: ${done.status.message}`);
        }
      } else await this.#waitForDisk(diskId);
      const instanceOperation = await this.#api.createInstance({
        metadata: { name, parent_id: projectId, labels },
        spec: {
          cloud_init_user_data: buildVmUserData(config, { backendCommands: NEBIUS_SETUP_COMMANDS }),
          resources: { platform, preset },
          ...(cluster ? { gpu_cluster: { id: cluster.id } } : {}),
          boot_disk: { attach_mode: 'READ_WRITE', existing_disk: { id: diskId } },
          network_interfaces: [
            {
              name: 'dstack-default-interface',
              subnet_id: await this.#subnetOf(projectId),
              ip_address: {},
              public_ip_address: { static: true },
            },
          ],
          ...(offer.instance.resources.spot
            ? { preemptible: { on_preemption: 'STOP' }, recovery_policy: 'FAIL' }
            : {}),
        },
      });
      instanceId = instanceOperation.resource_id;
      await this.#waitForInstance(instanceOperation);
    } catch (error) {
      await this.#cleanUpLaunch(instanceId, diskId);
      throw error;
    }
    return this.#provisioningData(offer, instanceId, diskId);
  }

  #provisioningData(
    offer: InstanceOfferWithAvailability,
    instanceId: string,
    bootDiskId: string,
  ): JobProvisioningData {
    const backendData: NebiusInstanceBackendData = { boot_disk_id: bootDiskId };
    return {
      backend: NEBIUS_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      internal_ip: null,
      region: offer.region,
      price: offer.price,
      username: 'ubuntu',
      ssh_port: 22,
      dockerized: true,
      ssh_proxy: null,
      public_ip_enabled: true,
      backend_data: JSON.stringify(backendData),
    };
  }

  /** Polls the operation until it is done or `timeoutMs` passes (dstack's `wait_for_operation`). */
  async #waitForOperation(operation: NebiusOperation, timeoutMs: number): Promise<NebiusOperation> {
    const deadline = Date.now() + timeoutMs;
    let current = operation;
    const delays = this.#pollDelays();
    while (current.status === null) {
      const delay = delays.next().value;
      if (Date.now() + delay > deadline) {
        throw new BackendApiCallError(`Nebius operation ${operation.id} wait timeout`, { isRetryable: true });
      }
      await sleep(delay);
      current = await this.#api.getComputeOperation(operation.id);
    }
    return current;
  }

  /** Until a boot disk a retried launch found is READY; ERROR or BROKEN fails the launch. */
  async #waitForDisk(diskId: string): Promise<void> {
    const deadline = Date.now() + WAIT_FOR_DISK_MS;
    const delays = this.#pollDelays();
    for (;;) {
      const state = (await this.#api.getDisk(diskId)).status?.state;
      if (state === 'READY') return;
      if (state === 'ERROR' || state === 'BROKEN')
        throw new ProvisioningError(`Nebius boot disk ${diskId} is ${state}`);
      const delay = delays.next().value;
      if (Date.now() + delay > deadline) {
        throw new BackendApiCallError(`Nebius boot disk ${diskId} not ready in time: ${state}`, {
          isRetryable: true,
        });
      }
      await sleep(delay);
    }
  }

  /** Until the instance is STARTING or RUNNING; a failed operation is its error (quota, capacity). */
  async #waitForInstance(operation: NebiusOperation): Promise<void> {
    const deadline = Date.now() + WAIT_FOR_INSTANCE_MS;
    let current = operation;
    const delays = this.#pollDelays();
    for (;;) {
      if (current.status !== null && current.status.code !== 0) {
        throw new NebiusApiFailure('create instance operation', current.status.code, current.status.message);
      }
      // Until the operation has made it, the instance may not be there yet.
      const instance = await this.#api.getInstance(current.resource_id).catch((error: unknown) => {
        if (error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND) return null;
        throw error;
      });
      const state = instance?.status?.state;
      if (state === 'STARTING' || state === 'RUNNING') return;
      if (Date.now() > deadline) {
        throw new BackendApiCallError(
          `Instance ${current.resource_id} did not start booting in time. Status: ${state}`,
        );
      }
      await sleep(delays.next().value);
      current = await this.#api.getComputeOperation(operation.id);
    }
  }

  /** 100 ms, doubling, up to the poll interval. */
  *#pollDelays(): Generator<number, never> {
    let delay = Math.min(100, this.#pollIntervalMs);
    for (;;) {
      yield delay;
      delay = Math.min(delay * 2, this.#pollIntervalMs);
    }
  }

  async #cleanUpLaunch(instanceId: string | undefined, diskId: string): Promise<void> {
    try {
      if (instanceId !== undefined) {
        try {
          await this.#waitForOperation(await this.#api.deleteInstance(instanceId), WAIT_FOR_DISK_MS);
        } catch (error) {
          ignoreNotFound(error);
        }
      }
      await this.#api.deleteDisk(diskId).catch(ignoreNotFound);
    } catch {
      // Best effort, as dstack: the launch's own error is what the caller needs.
    }
  }

  /**
   * dstack's: a GPU cluster on one of the master offer's InfiniBand fabrics (those `fabrics`
   * allows, chosen at random) in the group's region; an offer without fabrics gets a group with no
   * cluster. Returns once Nebius has accepted the create.
   */
  async createPlacementGroup(
    placementGroup: PlacementGroup,
    masterOffer: InstanceOffer,
  ): Promise<PlacementGroupProvisioningData> {
    let fabrics = offerFabrics(masterOffer);
    if (this.config.fabrics != null)
      fabrics = fabrics.filter((fabric) => this.config.fabrics?.includes(fabric));
    const data: NebiusPlacementGroupBackendData = { cluster: null };
    if (fabrics.length > 0) {
      const fabric = fabrics[Math.floor(Math.random() * fabrics.length)] as string;
      try {
        const projectId = await this.#projectOf(placementGroup.configuration.region);
        const operation = await this.#api.createGpuCluster(projectId, placementGroup.name, fabric);
        data.cluster = { id: operation.resource_id, fabric };
      } catch (error) {
        throw typedNebiusError(error);
      }
    }
    return { backend: NEBIUS_BACKEND_TYPE, backend_data: JSON.stringify(data) };
  }

  /** Deletes the group's GPU cluster; one already gone is fine. */
  async deletePlacementGroup(placementGroup: PlacementGroup): Promise<void> {
    const { cluster } = placementGroupData(placementGroup);
    if (cluster) await this.#api.deleteGpuCluster(cluster.id).catch(ignoreNotFound);
  }

  /** dstack's: the same region, and a group without a cluster or one on a fabric the offer has. */
  isSuitablePlacementGroup(placementGroup: PlacementGroup, offer: InstanceOffer): boolean {
    if (placementGroup.configuration.region !== offer.region) return false;
    const { cluster } = placementGroupData(placementGroup);
    return cluster === null || offerFabrics(offer).includes(cluster.fabric);
  }

  /** Looks the instance up once: its first interface's public and private addresses, once it has them. */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    let instance: Awaited<ReturnType<NebiusApi['getInstance']>>;
    try {
      instance = await this.#api.getInstance(provisioningData.instance_id);
    } catch (error) {
      if (error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND) {
        throw new ProvisioningError('Nebius instance not found');
      }
      throw typedNebiusError(error);
    }
    const state = instance.status?.state;
    if (state === 'ERROR' || state === 'DELETING' || state === 'STOPPED' || state === 'STOPPING') {
      throw new ProvisioningError(`Unexpected Nebius instance state: ${state}`);
    }
    const network = instance.status?.network_interfaces[0];
    const publicAddress = network?.public_ip_address?.address;
    if (!publicAddress) return provisioningData;
    return {
      ...provisioningData,
      hostname: publicAddress.split('/')[0] ?? null,
      internal_ip: network?.ip_address?.address?.split('/')[0] ?? null,
    };
  }

  /**
   * The contract's `instanceStatus`: Compute's view of an instance whose agents stopped answering.
   * Nebius preempts a preemptible instance by stopping it (`on_preemption: STOP`, kept, not
   * deleted), so a preemptible one STOPPING or STOPPED is `interrupted`; a regular one stopped, one
   * deleting, in ERROR or not found is `gone`.
   */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    let instance: Awaited<ReturnType<NebiusApi['getInstance']>>;
    try {
      instance = await this.#api.getInstance(provisioningData.instance_id);
    } catch (error) {
      if (error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND) return 'gone';
      throw typedNebiusError(error);
    }
    const state = instance.status?.state;
    if (state === 'STOPPING' || state === 'STOPPED')
      return instance.spec.preemptible != null ? 'interrupted' : 'gone';
    return state === 'DELETING' || state === 'ERROR' ? 'gone' : 'running';
  }

  /**
   * dstack's order: delete the instance (`NotYetTerminatedError` while it is there or deleting),
   * then, once it is gone, the boot disk; gone is fine.
   */
  async terminateInstance(instanceId: string, _region: string, backendData?: string | null): Promise<void> {
    let state: string | undefined;
    try {
      state = (await this.#api.getInstance(instanceId)).status?.state ?? 'UNSPECIFIED';
    } catch (error) {
      ignoreNotFound(error);
    }
    if (state !== undefined) {
      if (state !== 'DELETING') {
        await this.#api.deleteInstance(instanceId).catch(ignoreNotFound);
        throw new NotYetTerminatedError(
          `Requested instance deletion. Will wait for deletion before deleting the boot disk. Instance state was: ${state}`,
        );
      }
      throw new NotYetTerminatedError(
        `Waiting for instance deletion before deleting the boot disk. Instance state: ${state}`,
      );
    }
    const diskId = parseBackendData(backendData)?.boot_disk_id;
    if (diskId) await this.#api.deleteDisk(diskId).catch(ignoreNotFound);
  }
}

function parseBackendData(raw: string | null | undefined): NebiusInstanceBackendData | null {
  if (!raw) return null;
  try {
    return JSON.parse(raw) as NebiusInstanceBackendData;
  } catch {
    return null;
  }
}

/** The nebius backend's Compute, for use without a server (tests, scripts). */
export function createNebiusBackend(settings: NebiusBackendSettings): NebiusCompute {
  return new NebiusCompute(settings);
}
