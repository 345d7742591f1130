import { randomBytes } from 'node:crypto';
import { defaultCatalog } from '@dstack/catalog';
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendError,
  BackendRateLimitError,
  buildContainerEntrypoint,
  type Capability,
  type CatalogQueryable,
  type Compute,
  DEFAULT_DISK_SIZE_RANGE,
  type GetOffersOptions,
  getCatalogOffers,
  type InstanceOffer,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  NoCapacityError,
  NotYetTerminatedError,
  type Requirements,
  type RunJobParams,
  withAvailability,
} from '@dstack/core';
import { DSTACK_RUNNER_SSH_PORT, RUNNER_TOKEN_ENV } from '@dstack/core/agent-protocol';
import type { Dispatcher } from 'undici';
import { RunpodApi, RunpodGraphqlError } from './runpod-api.js';
import { RUNPOD_MIN_CUDA_VERSION } from './runpod-catalog-provider.js';
import {
  RUNPOD_BACKEND_TYPE,
  RUNPOD_COMMUNITY_CLOUD_DEFAULT,
  RUNPOD_DEFAULT_ENDPOINT_URL,
  type RunpodConfig,
} from './runpod-config.js';
import {
  DELETE_REGISTRY_AUTH_MUTATION,
  DEPLOY_CPU_POD_MUTATION,
  DEPLOY_ON_DEMAND_MUTATION,
  MY_PODS_QUERY,
  POD_QUERY,
  REGISTRY_AUTHS_QUERY,
  RENT_INTERRUPTABLE_MUTATION,
  SAVE_REGISTRY_AUTH_MUTATION,
  TERMINATE_POD_MUTATION,
} from './runpod-queries.js';

/**
 * What this Compute implements, declared on the plugin descriptor too: none of the optional
 * capabilities yet. dstack's RunPod backend also has network volumes and Instant Clusters
 * (multinode); here cluster offers are left out of plans and a volume is refused at plan time.
 */
export const RUNPOD_CAPABILITIES: readonly Capability[] = [];

/** RunPod sets no upper limit on a GPU pod's container disk (dstack's `CONFIGURABLE_DISK_SIZE`). */
const RUNPOD_CONFIGURABLE_DISK_SIZE = { min: 1, max: null };
/** RunPod's pod names: dstack keeps them to 60 characters. */
const MAX_POD_NAME_LENGTH = 60;
/** How often the registry credentials the backend saved are cleaned up (dstack's: a day). */
const REGISTRY_AUTH_CLEANUP_INTERVAL_MS = 24 * 60 * 60 * 1000;
/** RunPod's answers to a deploy no machine can take: the offer is gone, try the next. */
const NO_CAPACITY_MESSAGES = [
  /no longer any instances available/i,
  /does not have the resources to deploy your pod/i,
  /no instances currently available/i,
];

/** Settings of `createRunpodBackend`. */
export interface RunpodBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: RunpodConfig;
  /** The undici dispatcher every request goes through. Default undici's global one. */
  dispatcher?: Dispatcher;
  /** Where offers come from. Default: the process's `defaultCatalog()` (the server's: gpuhunt's published catalogs). */
  catalog?: CatalogQueryable;
}

/** Secure Cloud regions are data center ids (`CA-MTL-1`), Community Cloud ones country codes (`CA`). */
export function isRunpodSecureCloud(region: string): boolean {
  return region.includes('-');
}

/** An Instant Cluster offer (gpuhunt's `pod_counts` other than 1): for multinode runs only. */
function isClusterOffer(offer: InstanceOffer): boolean {
  const podCounts = (offer.backend_data as { pod_counts?: unknown } | undefined)?.pod_counts;
  return Array.isArray(podCounts) && podCounts.some((count) => count !== 1);
}

/** The pod's name: dstack's instance id, so a repeated launch finds the pod it made. */
export function runpodPodName(instanceId: string): string {
  return `dstack-${instanceId}`.slice(0, MAX_POD_NAME_LENGTH);
}

/**
 * A CPU offer's disk: gpuhunt gives the flavor's largest; the pod gets the smallest the job
 * accepts within 1 GB and that (dstack's modifier), or the offer does not fit.
 */
function withCpuDisk(offer: InstanceOffer, requirements: Requirements | undefined): InstanceOffer | null {
  const maxGb = offer.instance.resources.disk.size_mib / 1024;
  const wanted = requirements?.resources.disk?.size ?? DEFAULT_DISK_SIZE_RANGE;
  const min = Math.max(wanted.min ?? 1, 1);
  const max = Math.min(wanted.max ?? maxGb, maxGb);
  if (min > max) return null;
  const resources = { ...offer.instance.resources, disk: { size_mib: Math.round(min * 1024) } };
  return { ...offer, instance: { ...offer.instance, resources } };
}

/** Core's typed error for a failed call: refused key, throttling, or no capacity for the deploy. */
function typedRunpodError(error: unknown): unknown {
  if (BackendApiCallError.isInstance(error)) {
    if (error.statusCode === 401 || error.statusCode === 403) {
      return new BackendAuthenticationError(`RunPod refused the API key: ${error.message}`, { cause: error });
    }
    if (error.statusCode === 429) return new BackendRateLimitError(error.message, { cause: error });
  }
  if (
    error instanceof RunpodGraphqlError &&
    NO_CAPACITY_MESSAGES.some((pattern) => pattern.test(error.message))
  ) {
    return new NoCapacityError(error.message, { cause: error });
  }
  return error;
}

interface RunpodPod {
  id: string;
  name?: string | null;
  desiredStatus?: string | null;
  podType?: string | null;
  runtime?: { ports?: { ip: string; privatePort: number; publicPort: number; type: string }[] | null } | null;
}

/**
 * Runs each job in a RunPod pod of the job's own image, whose entrypoint (core's
 * `buildContainerEntrypoint`, as RunPod's `dockerArgs`) downloads the runner's portable runtime
 * and starts the runner with its SSH port exposed; the server logs in there with the project key.
 */
export class RunpodCompute implements Compute {
  readonly type = RUNPOD_BACKEND_TYPE;
  readonly capabilities = RUNPOD_CAPABILITIES;
  readonly config: RunpodConfig;
  readonly #api: RunpodApi;
  readonly #catalog: CatalogQueryable | undefined;
  #lastRegistryAuthCleanup = 0;

  constructor(settings: RunpodBackendSettings) {
    this.config = settings.config;
    this.#api = new RunpodApi({
      endpointUrl: settings.config.endpoint_url ?? RUNPOD_DEFAULT_ENDPOINT_URL,
      apiKey: settings.config.creds.api_key,
      dispatcher: settings.dispatcher,
    });
    this.#catalog = settings.catalog;
  }

  /**
   * The catalog's RunPod offers (gpuhunt's `runpod.csv`) in the configured regions: Secure Cloud,
   * and Community Cloud when `community_cloud` is true; single pods only (no Instant Clusters).
   * All available, with the `runner` runtime.
   */
  async getOffers(
    requirements: Requirements,
    _options: GetOffersOptions = {},
  ): Promise<InstanceOfferWithAvailability[]> {
    const communityCloud = this.config.community_cloud ?? RUNPOD_COMMUNITY_CLOUD_DEFAULT;
    const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), RUNPOD_BACKEND_TYPE, {
      requirements,
      locations: this.config.regions ?? null,
      configurableDiskSize: RUNPOD_CONFIGURABLE_DISK_SIZE,
      extraFilter: (offer) => (isRunpodSecureCloud(offer.region) || communityCloud) && !isClusterOffer(offer),
    });
    return offers.flatMap((offer) => {
      const sized = offer.instance.resources.gpus.length > 0 ? offer : withCpuDisk(offer, requirements);
      return sized ? [withAvailability(sized, 'available', { instance_runtime: 'runner' })] : [];
    });
  }

  /**
   * Deploys a pod of the job's image on the offer's GPU type (or CPU flavor) in its data center
   * or country, named after `params.instanceId`: a pod with that name already there is returned
   * instead (a retried launch). No machine for it is `NoCapacityError` (the next offer).
   */
  async runJob(params: RunJobParams): Promise<JobProvisioningData> {
    try {
      return await this.#runJob(params);
    } catch (error) {
      throw typedRunpodError(error);
    }
  }

  async #runJob(params: RunJobParams): Promise<JobProvisioningData> {
    const name = runpodPodName(params.instanceId);
    const existing = (await this.#myPods()).find((pod) => pod.name === name);
    if (existing) return this.#provisioningData(params.offer, existing.id);
    const { offer } = params;
    const jobSpec = params.job.job_spec;
    const resources = offer.instance.resources;
    const registryAuthId = await this.#saveRegistryAuth(jobSpec.registry_auth);
    const common = {
      name,
      imageName: jobSpec.image_name,
      containerDiskInGb: Math.round(resources.disk.size_mib / 1024),
      startSsh: true,
      dockerArgs: JSON.stringify({
        cmd: [
          buildContainerEntrypoint({
            runtimeDownloadUrl: params.runnerDownloadUrl,
            sshAuthorizedKeys: [params.projectSshPublicKey],
          }),
        ],
        entrypoint: ['/bin/sh', '-c'],
      }),
      ports: `${DSTACK_RUNNER_SSH_PORT}/tcp`,
      // RUNPOD_POD_USER=0: the container runs as root, as dstack asks.
      env: [
        { key: RUNNER_TOKEN_ENV, value: params.agentToken },
        { key: 'RUNPOD_POD_USER', value: '0' },
      ],
      ...(registryAuthId === null ? {} : { containerRegistryAuthId: registryAuthId }),
    };
    const gpuCount = resources.gpus.length;
    let podId: string;
    if (gpuCount === 0) {
      if (!isRunpodSecureCloud(offer.region)) {
        throw new BackendError('RunPod CPU offers are only supported in Secure Cloud regions');
      }
      const data = await this.#api.graphql<{ deployCpuPod: { id: string } }>(
        'deployCpuPod',
        DEPLOY_CPU_POD_MUTATION,
        {
          input: {
            ...common,
            instanceId: offer.instance.name,
            cloudType: 'SECURE',
            deployCost: offer.price,
            dataCenterId: offer.region,
          },
        },
      );
      podId = data.deployCpuPod.id;
    } else {
      const secure = isRunpodSecureCloud(offer.region);
      const input = {
        ...common,
        gpuTypeId: offer.instance.name,
        cloudType: secure ? 'SECURE' : 'COMMUNITY',
        ...(secure ? { dataCenterId: offer.region } : { countryCode: offer.region }),
        gpuCount,
        minVcpuCount: resources.cpus,
        minMemoryInGb: Math.round(resources.memory_mib / 1024),
        supportPublicIp: true,
        minCudaVersion: RUNPOD_MIN_CUDA_VERSION,
      };
      if (resources.spot) {
        const data = await this.#api.graphql<{ podRentInterruptable: { id: string } }>(
          'podRentInterruptable',
          RENT_INTERRUPTABLE_MUTATION,
          { input: { ...input, bidPerGpu: offer.price / gpuCount } },
        );
        podId = data.podRentInterruptable.id;
      } else {
        const data = await this.#api.graphql<{ podFindAndDeployOnDemand: { id: string } }>(
          'podFindAndDeployOnDemand',
          DEPLOY_ON_DEMAND_MUTATION,
          { input },
        );
        podId = data.podFindAndDeployOnDemand.id;
      }
    }
    await this.#cleanRegistryAuths();
    return this.#provisioningData(offer, podId);
  }

  /** Terminates the pod; one RunPod no longer knows is gone already. Throttled: asked again later. */
  async terminateInstance(instanceId: string, _region: string, _backendData?: string | null): Promise<void> {
    try {
      await this.#api.graphql('podTerminate', TERMINATE_POD_MUTATION, { input: { podId: instanceId } });
    } catch (error) {
      if (error instanceof RunpodGraphqlError && error.firstMessage === 'pod not found to terminate') return;
      if (BackendApiCallError.isInstance(error) && error.statusCode === 429) {
        throw new NotYetTerminatedError(`RunPod throttled the termination of pod ${instanceId}`, {
          cause: error,
        });
      }
      throw typedRunpodError(error);
    }
  }

  /**
   * Looks the pod up once: once its container runs, `hostname` and `ssh_port` are the public
   * address and port RunPod mapped the runner's 10022 to. A pod not running yet, not listed yet,
   * or a throttled call changes nothing.
   */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    let pod: RunpodPod | null;
    try {
      pod = await this.#pod(provisioningData.instance_id);
    } catch (error) {
      if (BackendApiCallError.isInstance(error) && error.isRetryable) return provisioningData;
      throw typedRunpodError(error);
    }
    const port = pod?.runtime?.ports?.find((each) => each.privatePort === DSTACK_RUNNER_SSH_PORT);
    if (!port) return provisioningData;
    return { ...provisioningData, hostname: port.ip, ssh_port: port.publicPort };
  }

  /** The contract's `instanceStatus`: an exited spot pod was `interrupted`; a running one `running`. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const pod = await this.#pod(provisioningData.instance_id);
    if (pod === null) return 'gone';
    if (pod.desiredStatus === 'RUNNING') return 'running';
    return pod.podType === 'INTERRUPTABLE' && pod.desiredStatus === 'EXITED' ? 'interrupted' : 'gone';
  }

  async #pod(podId: string): Promise<RunpodPod | null> {
    const data = await this.#api.graphql<{ pod: RunpodPod | null }>('pod', POD_QUERY, { input: { podId } });
    return data.pod;
  }

  async #myPods(): Promise<RunpodPod[]> {
    const data = await this.#api.graphql<{ myself: { pods: RunpodPod[] | null } | null }>(
      'myself',
      MY_PODS_QUERY,
    );
    return data.myself?.pods ?? [];
  }

  /** Registry credentials for a private image, saved under a random name (dstack's); null without. */
  async #saveRegistryAuth(auth: RunJobParams['job']['job_spec']['registry_auth']): Promise<string | null> {
    if (!auth?.username || !auth.password) return null;
    const data = await this.#api.graphql<{ saveRegistryAuth: { id: string } }>(
      'saveRegistryAuth',
      SAVE_REGISTRY_AUTH_MUTATION,
      { input: { name: randomBytes(16).toString('hex'), username: auth.username, password: auth.password } },
    );
    return data.saveRegistryAuth.id;
  }

  /**
   * Once a day, deletes the saved registry credentials oldest first until RunPod refuses one (it is
   * still used by a pod), as dstack does; a failure here never fails the launch.
   */
  async #cleanRegistryAuths(): Promise<void> {
    if (Date.now() - this.#lastRegistryAuthCleanup < REGISTRY_AUTH_CLEANUP_INTERVAL_MS) return;
    this.#lastRegistryAuthCleanup = Date.now();
    try {
      const data = await this.#api.graphql<{
        myself: { containerRegistryCreds: { id: string }[] | null } | null;
      }>('myself', REGISTRY_AUTHS_QUERY);
      for (const auth of data.myself?.containerRegistryCreds ?? []) {
        await this.#api.graphql('deleteRegistryAuth', DELETE_REGISTRY_AUTH_MUTATION, {
          registryAuthId: auth.id,
        });
      }
    } catch {
      // The first credential still in use ends the cleanup.
    }
  }

  #provisioningData(offer: InstanceOfferWithAvailability, podId: string): JobProvisioningData {
    return {
      backend: RUNPOD_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: podId,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: true,
      region: offer.region,
      availability_zone: null,
      price: offer.price,
      username: 'root',
      ssh_port: null,
      dockerized: false,
      backend_data: null,
    };
  }
}

/** The RunPod backend's Compute, for use without a server (tests, scripts). */
export function createRunpodBackend(settings: RunpodBackendSettings): RunpodCompute {
  return new RunpodCompute(settings);
}
