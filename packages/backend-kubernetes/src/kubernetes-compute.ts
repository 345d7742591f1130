import { type CatalogItem, matches } from '@dstack/catalog';
import {
  BackendError,
  type Capability,
  type Compute,
  catalogItemToOffer,
  type GetOffersOptions,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  type ProjectSshKeys,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  requirementsToQueryFilter,
  type Volume,
  type VolumeProvisioningData,
  withAvailability,
} from '@dstack/core';
import { DSTACK_RUNNER_SSH_PORT } from '@dstack/core/agent-protocol';
import type { Dispatcher } from 'undici';
import { clustersOf, type KubernetesCluster } from './kubeconfig.js';
import { KubernetesApi, type KubernetesObject } from './kubernetes-api.js';
import { KUBERNETES_BACKEND_TYPE, type KubernetesConfig } from './kubernetes-config.js';
import { baseLabels } from './kubernetes-labels.js';
import {
  AMD_GPU_RESOURCE,
  NVIDIA_GPU_RESOURCE,
  nodeCatalogItem,
  requestedByNode,
} from './kubernetes-offers.js';
import { podFailure, unschedulableReason } from './kubernetes-pod-failures.js';
import {
  DEFAULT_JUMP_POD_IMAGE,
  JUMP_POD_USER,
  jobPod,
  jobPodName,
  jumpPod,
  jumpPodName,
  jumpPodService,
  jumpPodTolerations,
  registryAuthSecret,
  registryAuthSecretNameOf,
  serviceNameOf,
} from './kubernetes-pods.js';
import {
  claimNameOf,
  claimProvisioningData,
  claimSizeGb,
  persistentVolumeClaim,
} from './kubernetes-volumes.js';

/**
 * Pods of one cluster (one region) reach each other by pod IP: multi-node tasks. Volumes are
 * PersistentVolumeClaims, instance volumes the node's host paths (`kubernetes-volumes.ts`). No
 * fleets (`create-instance`): a job is a pod. Gateways are not implemented yet, so not declared.
 */
export const KUBERNETES_CAPABILITIES: readonly Capability[] = ['multinode', 'volumes', 'instance-volumes'];

/** Settings of `createKubernetesBackend`. */
export interface KubernetesBackendSettings {
  /** The backend's config with creds (`KubernetesConfig`), as the configurator reads it. Required. */
  config: KubernetesConfig;
  /**
   * The jump pod's image: sshd, `ssh-keygen` and a POSIX shell. Default dstack's
   * (`testcontainers/sshd:1.3.0`); env `DSTACK_KUBERNETES_JUMP_POD_IMAGE`.
   */
  jumpPodImage?: string;
  /**
   * Whether the job container gets `SYS_RESOURCE` (dstack adds it, so jobs may raise hard
   * rlimits). Default false: a runtime without that capability (rootless, sandboxed) refuses the
   * pod; env `DSTACK_KUBERNETES_ADD_SYS_RESOURCE=true` turns it on.
   */
  addSysResource?: boolean;
  /** The undici dispatcher every API call goes through. Default: one per cluster, with its TLS. */
  dispatcher?: Dispatcher;
  /** Per-request limit in milliseconds. Default 15 000. */
  timeoutMs?: number;
  /** How long a pod may stay unschedulable before provisioning fails. Default 10 000 (dstack's). */
  schedulingTimeoutMs?: number;
}

/** What `backend_data` of the provisioning data holds. */
export interface KubernetesBackendData {
  pod_name: string;
  jump_pod_name: string;
  project: string;
}

interface ClusterClient {
  cluster: KubernetesCluster;
  api: KubernetesApi;
}

const DEFAULT_SCHEDULING_TIMEOUT_MS = 10_000;
/** How long a namespace just made may take to get its default service account (a second or two). */
const SERVICE_ACCOUNT_WAIT_MS = 20_000;

function environmentFlag(name: string): boolean | undefined {
  const value = process.env[name];
  return value === undefined ? undefined : value === 'true' || value === '1';
}

/**
 * Runs each job in a pod of the job's image whose command (core's container entrypoint)
 * downloads the runner and starts it; the server reaches the runner's SSH port at the pod's IP
 * through the project's jump pod (sshd behind a NodePort Service), as dstack does.
 */
export class KubernetesCompute implements Compute {
  readonly type = KUBERNETES_BACKEND_TYPE;
  readonly capabilities = KUBERNETES_CAPABILITIES;
  readonly config: KubernetesConfig;
  readonly #clusters: Map<string, ClusterClient>;
  readonly #jumpPodImage: string;
  readonly #addSysResource: boolean;
  readonly #schedulingTimeoutMs: number;

  constructor(settings: KubernetesBackendSettings) {
    this.config = settings.config;
    const kubeconfig = settings.config.creds.data;
    if (!kubeconfig) throw new BackendError('kubeconfig.data is empty: the kubeconfig was not read');
    this.#clusters = new Map(
      clustersOf(settings.config, kubeconfig).map((cluster) => [
        cluster.region,
        {
          cluster,
          api: new KubernetesApi({
            access: cluster.access,
            dispatcher: settings.dispatcher,
            timeoutMs: settings.timeoutMs,
          }),
        },
      ]),
    );
    this.#jumpPodImage =
      settings.jumpPodImage ?? process.env.DSTACK_KUBERNETES_JUMP_POD_IMAGE ?? DEFAULT_JUMP_POD_IMAGE;
    this.#addSysResource =
      settings.addSysResource ?? environmentFlag('DSTACK_KUBERNETES_ADD_SYS_RESOURCE') ?? false;
    this.#schedulingTimeoutMs = settings.schedulingTimeoutMs ?? DEFAULT_SCHEDULING_TIMEOUT_MS;
  }

  /** The enabled clusters, for `validateConfig`. */
  get clusters(): readonly ClusterClient[] {
    return [...this.#clusters.values()];
  }

  /**
   * One offer per schedulable node of every cluster that matches the requirements, sized by
   * what is free on it (allocatable less running pods' requests, unless
   * `unallocatedResources: false`) and cut to what the job requests (dstack's offer modifier)
   * before it is matched; with `fullOffers` the whole node is offered too. A cluster that does
   * not answer gives no offers.
   */
  async getOffers(
    requirements: Requirements,
    options: GetOffersOptions = {},
  ): Promise<InstanceOfferWithAvailability[]> {
    const filter = requirementsToQueryFilter(requirements, { provider: KUBERNETES_BACKEND_TYPE });
    const perCluster = await Promise.all(
      this.clusters.map(async ({ cluster, api }) => {
        try {
          const [nodes, pods] = await Promise.all([
            api.listNodes(options.signal),
            options.unallocatedResources === false
              ? Promise.resolve([])
              : api.listAllPods(undefined, options.signal),
          ]);
          const requested = requestedByNode(pods);
          const offers: InstanceOfferWithAvailability[] = [];
          for (const node of nodes) {
            const item = nodeCatalogItem(node, cluster.region, requested.get(node.metadata?.name ?? ''));
            if (item === null) continue;
            // The slice is matched, not the node: a job asking for exactly 1 CPU fits a node
            // with 8 free, as a pod requesting 1 does.
            const candidates = options.fullOffers
              ? [sliceOf(item, requirements), item]
              : [sliceOf(item, requirements)];
            for (const candidate of candidates) {
              if (!matches(candidate, filter)) continue;
              const offer = catalogItemToOffer(candidate, KUBERNETES_BACKEND_TYPE, { requirements });
              if (offer === null) continue;
              offers.push(withAvailability(offer, 'available', { instance_runtime: 'runner' }));
            }
          }
          return offers;
        } catch (error) {
          if (options.signal?.aborted) throw error;
          return [];
        }
      }),
    );
    return perCluster.flat();
  }

  /**
   * Makes sure the project's jump pod and its Service exist, then creates the job pod named
   * after `params.instanceId` (a pod of that name already there is the first launch's: it is
   * returned) with an image pull Secret for `registry_auth`. Returns at once: the pod's IP and
   * the jump pod's address come in `updateProvisioningData`.
   */
  async runJob(params: RunJobParams): Promise<JobProvisioningData> {
    const { cluster, api } = this.#clusterOf(params.offer.region);
    const namespace = cluster.namespace;
    const project = params.run.project_name;
    await this.#ensureNamespace(api, namespace);
    await this.#ensureJumpPod({ cluster, api }, project, params.projectSshPublicKey.trim());

    const podName = jobPodName(params.instanceId);
    const provisioningData = this.#provisioningData(params.offer, podName, project, params.requirements);
    if ((await api.read(namespace, 'pods', podName)) !== null) return provisioningData;

    const jobSpec = params.job.job_spec;
    const labels = baseLabels('job', podName, project, { name: jobSpec.job_name, user: params.run.user });
    let secretName: string | null = null;
    const auth = jobSpec.registry_auth;
    if (auth?.username && auth.password) {
      secretName = registryAuthSecretNameOf(podName);
      await api.create(
        namespace,
        'secrets',
        registryAuthSecret(secretName, labels, jobSpec.image_name, auth.username, auth.password),
      );
    }
    await this.#createPod(
      api,
      namespace,
      jobPod({
        name: podName,
        labels,
        params,
        gpuResource: gpuResourceOf(params.requirements),
        registryAuthSecretName: secretName,
        addSysResource: this.#addSysResource,
      }),
    );
    return provisioningData;
  }

  /**
   * Looks the job pod up once. A pod the scheduler could not place for `schedulingTimeoutMs`, an
   * image the kubelet cannot get, a failed or deleted pod fails provisioning with the cluster's
   * words. Once the jump pod runs, `ssh_proxy` is `proxy_jump.hostname` (else the jump pod's
   * node's ExternalIP) and the Service's NodePort; once the job pod runs too, `hostname` and
   * `internal_ip` are its IP.
   *
   * The jump pod is looked at on every call, not only until `ssh_proxy` is first set: the
   * project's previous job, ending meanwhile, may have seen no other job pod and deleted it (and
   * a pod being deleted keeps its name, so it cannot be made again until it is gone). An address
   * is only given while a jump pod runs that is not being deleted, else the job would wait for a
   * proxy that is gone until its provisioning timeout.
   */
  async updateProvisioningData(
    provisioningData: JobProvisioningData,
    projectSshKeys: ProjectSshKeys,
  ): Promise<JobProvisioningData> {
    const { cluster, api } = this.#clusterOf(provisioningData.region);
    const namespace = cluster.namespace;
    const data = backendDataOf(provisioningData);
    const pod = await api.read(namespace, 'pods', provisioningData.instance_id);
    if (pod === null || pod.metadata?.deletionTimestamp) {
      throw new ProvisioningError(`pod ${provisioningData.instance_id} is gone from the cluster`);
    }
    const failure = podFailure(pod);
    if (failure !== null) throw new ProvisioningError(failure);
    const unschedulable = unschedulableReason(pod, this.#schedulingTimeoutMs);
    if (unschedulable !== null) {
      throw new ProvisioningError(`pod ${provisioningData.instance_id} was not scheduled: ${unschedulable}`);
    }
    await this.#ensureJumpPod({ cluster, api }, data.project, projectSshKeys.publicKey.trim());
    const proxy = await this.#jumpAddress({ cluster, api }, data.jump_pod_name);
    if (proxy === null) return { ...provisioningData, ssh_proxy: null, hostname: null, internal_ip: null };
    const updated = { ...provisioningData, ssh_proxy: proxy };
    const podIp: string | undefined = pod.status?.podIP;
    if (pod.status?.phase !== 'Running' || !podIp) return updated;
    return { ...updated, hostname: podIp, internal_ip: podIp };
  }

  /**
   * Deletes the job pod and its Secret (idempotent). The project's jump pod and Service go too
   * once no job pod of the project is left, so nothing stays behind the last job.
   */
  async terminateInstance(instanceId: string, region: string, backendData?: string | null): Promise<void> {
    const { cluster, api } = this.#clusterOf(region);
    const namespace = cluster.namespace;
    await api.delete(namespace, 'pods', instanceId);
    await api.delete(namespace, 'secrets', registryAuthSecretNameOf(instanceId));
    const project = parseBackendData(backendData)?.project;
    if (!project) return;
    const jobs = await api.list(namespace, 'pods', {
      labelSelector: `app.kubernetes.io/name=dstack-job,k8s.dstack.ai/project=${project}`,
    });
    if (jobs.some((job) => !job.metadata?.deletionTimestamp)) return;
    const jumpName = jumpPodName(project);
    await api.delete(namespace, 'services', serviceNameOf(jumpName));
    await api.delete(namespace, 'pods', jumpName);
  }

  /**
   * Asked when the runner stopped answering: `gone` once the job pod is deleted or finished, or
   * its node is gone or not Ready (the kubelet stopped reporting: the cluster would evict the pod
   * only after its 5-minute toleration), else `running`.
   */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const { cluster, api } = this.#clusterOf(provisioningData.region);
    const pod = await api.read(cluster.namespace, 'pods', provisioningData.instance_id);
    if (pod === null || pod.metadata?.deletionTimestamp) return 'gone';
    const phase = pod.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') return 'gone';
    const nodeName: string | undefined = pod.spec?.nodeName;
    if (nodeName === undefined) return 'running';
    const node = await api.readNode(nodeName);
    return node !== null && isNodeReady(node) ? 'running' : 'gone';
  }

  /**
   * Registers the PersistentVolumeClaim `claim_name` of the volume's cluster (its region) and
   * namespace: its size is the claim's capacity (else its request). Throws when it does not exist.
   */
  async registerVolume(volume: Volume): Promise<VolumeProvisioningData> {
    const { cluster, api } = this.#clusterOf(volume.configuration.region);
    const claimName = volume.configuration.claim_name;
    if (!claimName)
      throw new BackendError(`volume ${volume.name}: claim_name is required to register a claim`);
    const claim = await api.read(cluster.namespace, 'persistentvolumeclaims', claimName);
    if (claim === null) {
      throw new BackendError(
        `PersistentVolumeClaim ${claimName} not found in namespace ${cluster.namespace} of ${cluster.region}`,
      );
    }
    return claimProvisioningData(claimName, claimSizeGb(claim));
  }

  /**
   * Creates a PersistentVolumeClaim of `size` GiB (`storage_class_name`, `access_modes`) named
   * after the volume's id: a second call finds the claim the first made. The cluster binds it
   * (at once, or when the first pod mounts it, as its StorageClass says).
   */
  async createVolume(volume: Volume): Promise<VolumeProvisioningData> {
    const { cluster, api } = this.#clusterOf(volume.configuration.region);
    await this.#ensureNamespace(api, cluster.namespace);
    const name = claimNameOf(volume);
    await api.create(cluster.namespace, 'persistentvolumeclaims', persistentVolumeClaim(volume, name));
    return claimProvisioningData(name, Math.ceil(volume.configuration.size ?? 0));
  }

  /** Deletes the volume's claim (the server never calls it for a registered one); gone is fine. */
  async deleteVolume(volume: Volume): Promise<void> {
    const { cluster, api } = this.#clusterOf(volume.configuration.region);
    const claimName = volume.volume_id ?? volume.provisioning_data?.volume_id;
    if (!claimName) return;
    await api.delete(cluster.namespace, 'persistentvolumeclaims', claimName);
  }

  /** Closes the clusters' connections. */
  async close(): Promise<void> {
    await Promise.all(this.clusters.map(({ api }) => api.close()));
  }

  #clusterOf(region: string): ClusterClient {
    const client = this.#clusters.get(region);
    if (!client) throw new BackendError(`Unknown region: "${region}" is not one of the configured contexts`);
    return client;
  }

  /** Creates the backend's namespace when it does not exist yet. */
  async #ensureNamespace(api: KubernetesApi, namespace: string): Promise<void> {
    if ((await api.readNamespace(namespace)) !== null) return;
    await api.createNamespace(namespace);
    await this.#waitForDefaultServiceAccount(api, namespace);
  }

  /**
   * Waits until a namespace just made has its default service account: until the controller
   * manager makes it, the API server refuses pods there.
   */
  async #waitForDefaultServiceAccount(api: KubernetesApi, namespace: string): Promise<void> {
    const deadline = Date.now() + SERVICE_ACCOUNT_WAIT_MS;
    while ((await api.read(namespace, 'serviceaccounts', 'default')) === null) {
      if (Date.now() > deadline)
        throw new BackendError(`namespace ${namespace} has no default service account yet`);
      await sleep(250);
    }
  }

  /**
   * Creates a pod, again while the API server says the service account's token is not made yet
   * (clusters before 1.21 mount it from a Secret the controller manager makes a moment after the
   * namespace).
   */
  async #createPod(api: KubernetesApi, namespace: string, pod: KubernetesObject): Promise<void> {
    const deadline = Date.now() + SERVICE_ACCOUNT_WAIT_MS;
    for (;;) {
      try {
        await api.create(namespace, 'pods', pod);
        return;
      } catch (error) {
        const tokenPending = /retry after the token is automatically created/.test((error as Error).message);
        if (!tokenPending || Date.now() > deadline) throw error;
        await sleep(250);
      }
    }
  }

  /** Creates the jump pod and its NodePort Service when either is missing (dstack's check). */
  async #ensureJumpPod({ cluster, api }: ClusterClient, project: string, projectKey: string): Promise<void> {
    const namespace = cluster.namespace;
    const name = jumpPodName(project);
    const [service, pod] = await Promise.all([
      api.read(namespace, 'services', serviceNameOf(name)),
      api.read(namespace, 'pods', name),
    ]);
    if (service !== null && pod !== null && !pod.metadata?.deletionTimestamp) return;
    // A pod being deleted keeps its name until it is gone: the create is refused (409) until then,
    // and a later call makes it.
    if (pod === null || pod.metadata?.deletionTimestamp) {
      const tolerations = jumpPodTolerations(await api.listNodes());
      await this.#createPod(
        api,
        namespace,
        jumpPod(name, project, this.#jumpPodImage, projectKey, tolerations),
      );
    }
    if (service === null) {
      await api.create(namespace, 'services', jumpPodService(name, project, cluster.proxyJump.port));
    }
  }

  /** The jump pod's SSH address once it runs, else null. */
  async #jumpAddress({ cluster, api }: ClusterClient, jumpName: string) {
    const namespace = cluster.namespace;
    const [pod, service] = await Promise.all([
      api.read(namespace, 'pods', jumpName),
      api.read(namespace, 'services', serviceNameOf(jumpName)),
    ]);
    // A jump pod being deleted (its project's last job ended a moment ago) is no address.
    if (pod === null || service === null || pod.metadata?.deletionTimestamp) return null;
    const failure = podFailure(pod);
    if (failure !== null) throw new ProvisioningError(`jump pod: ${failure}`);
    if (pod.status?.phase !== 'Running') return null;
    const port: number | undefined = service.spec?.ports?.[0]?.nodePort;
    if (!port) return null;
    let hostname = cluster.proxyJump.hostname ?? null;
    if (!hostname) {
      const node = pod.spec?.nodeName ? await api.readNode(pod.spec.nodeName) : null;
      hostname = externalAddressOf(node);
    }
    if (!hostname) {
      throw new ProvisioningError(
        `the jump pod's node has no ExternalIP: set proxy_jump.hostname to an address of a node the server can reach`,
      );
    }
    return { hostname, port, username: JUMP_POD_USER };
  }

  #provisioningData(
    offer: InstanceOfferWithAvailability,
    podName: string,
    project: string,
    requirements: Requirements,
  ): JobProvisioningData {
    const backendData: KubernetesBackendData = {
      pod_name: podName,
      jump_pod_name: jumpPodName(project),
      project,
    };
    const instanceType = structuredClone(offer.instance);
    cutToRequests(instanceType.resources, requirements);
    return {
      backend: KUBERNETES_BACKEND_TYPE,
      instance_type: instanceType,
      instance_id: podName,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: false,
      region: offer.region,
      availability_zone: null,
      price: offer.price,
      username: 'root',
      ssh_port: DSTACK_RUNNER_SSH_PORT,
      dockerized: false,
      ssh_proxy: null,
      backend_data: JSON.stringify(backendData),
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether the node's Ready condition is True (its kubelet reports, and it can run pods). */
function isNodeReady(node: KubernetesObject): boolean {
  const conditions: Array<{ type?: string; status?: string }> = node.status?.conditions ?? [];
  return conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True');
}

/** The node's ExternalIP (else its first address), or null. */
function externalAddressOf(node: KubernetesObject | null): string | null {
  const addresses: Array<{ type?: string; address?: string }> = node?.status?.addresses ?? [];
  return addresses.find((address) => address.type === 'ExternalIP')?.address ?? null;
}

/** `have` cut to the requested minimum; all of it when nothing is requested. */
function cut(have: number, wanted: number | null | undefined): number {
  return wanted == null || wanted <= 0 ? have : Math.min(have, wanted);
}

/**
 * dstack's offer modifier: the node's free resources cut to what the job requests (the pod's
 * requests), so that requirements are matched against the slice a pod takes. GPUs only when
 * asked for: a CPU job's pod requests none.
 */
function sliceOf(item: CatalogItem, requirements: Requirements): CatalogItem {
  const wanted = requirements.resources;
  const gpuCount = Math.min(item.gpuCount, wanted.gpu?.count.min ?? 0);
  return {
    ...item,
    cpu: cut(item.cpu, wanted.cpu.count.min),
    memory: cut(item.memory, wanted.memory.min),
    diskSize: item.diskSize === null ? null : cut(item.diskSize, wanted.disk?.size.min),
    gpuCount,
    gpuName: gpuCount > 0 ? item.gpuName : null,
    gpuMemory: gpuCount > 0 ? item.gpuMemory : null,
    gpuVendor: gpuCount > 0 ? item.gpuVendor : null,
  };
}

/** The offer's resources cut as `sliceOf` cuts a node: what the launched pod requests. */
function cutToRequests(
  resources: InstanceOfferWithAvailability['instance']['resources'],
  requirements: Requirements,
) {
  const wanted = requirements.resources;
  resources.cpus = cut(resources.cpus, wanted.cpu.count.min);
  const memoryMin = wanted.memory.min;
  resources.memory_mib = cut(resources.memory_mib, memoryMin == null ? null : Math.round(memoryMin * 1024));
  resources.gpus = resources.gpus.slice(0, wanted.gpu?.count.min ?? 0);
  const diskMin = wanted.disk?.size.min;
  resources.disk = {
    size_mib: cut(resources.disk.size_mib, diskMin == null ? null : Math.round(diskMin * 1024)),
  };
}

/** The GPU resource the job requests: `amd.com/gpu` for AMD, else `nvidia.com/gpu`; null without GPUs. */
function gpuResourceOf(requirements: Requirements): string | null {
  const gpu = requirements.resources.gpu;
  if (!gpu || (gpu.count.min ?? 0) === 0) return null;
  return gpu.vendor === 'amd' ? AMD_GPU_RESOURCE : NVIDIA_GPU_RESOURCE;
}

function parseBackendData(text: string | null | undefined): Partial<KubernetesBackendData> | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as Partial<KubernetesBackendData>;
  } catch {
    return null;
  }
}

function backendDataOf(provisioningData: JobProvisioningData): KubernetesBackendData {
  const data = parseBackendData(provisioningData.backend_data);
  if (!data?.jump_pod_name || !data.project) {
    throw new ProvisioningError(`instance ${provisioningData.instance_id} has no Kubernetes backend data`);
  }
  return {
    pod_name: data.pod_name ?? provisioningData.instance_id,
    jump_pod_name: data.jump_pod_name,
    project: data.project,
  };
}

/** The Kubernetes backend's Compute, for use without a server (tests, scripts). */
export function createKubernetesBackend(settings: KubernetesBackendSettings): KubernetesCompute {
  return new KubernetesCompute(settings);
}
