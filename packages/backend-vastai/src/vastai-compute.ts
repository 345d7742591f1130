import { matches } from '@dstack/catalog';
import {
  BackendApiCallError,
  BackendError,
  buildContainerEntrypoint,
  type Capability,
  type Compute,
  catalogItemToOffer,
  DEFAULT_DISK_SIZE_RANGE,
  type GetOffersOptions,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  NoCapacityError,
  NotYetTerminatedError,
  OffersCache,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  requirementsToQueryFilter,
  withAvailability,
} from '@dstack/core';
import { DSTACK_RUNNER_SSH_PORT, RUNNER_TOKEN_ENV } from '@dstack/core/agent-protocol';
import type { Dispatcher } from 'undici';
import { VastAiApi, type VastAiInstance, type VastAiRentBody } from './vastai-api.js';
import { VastAiCatalogProvider } from './vastai-catalog-provider.js';
import { VAST_AI_BACKEND_TYPE, VAST_AI_DEFAULT_ENDPOINT_URL, type VastAiConfig } from './vastai-config.js';
import { VAST_AI_QUALITY_FILTERS, type VastAiOfferData } from './vastai-offers.js';

/**
 * What this Compute implements, declared on the plugin descriptor too: none of the optional
 * capabilities (dstack's Vast.ai backend has only cached offers: no fleets, volumes, gateways).
 * Not `multinode`: each rental is a container on some host of the marketplace, with no network
 * shared with the others, so the nodes of a cluster could not reach each other.
 */
export const VAST_AI_CAPABILITIES: readonly Capability[] = [];

/** The runner's SSH port as Vast.ai lists it in an instance's `ports` (only `-p` ports, once running). */
const SSH_PORT_KEY = `${DSTACK_RUNNER_SSH_PORT}/tcp`;

/** Settings of `createVastAiBackend`. */
export interface VastAiBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: VastAiConfig;
  /** The undici dispatcher every request goes through. Default undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-request limit in milliseconds. Default 10 000. */
  timeoutMs?: number;
  /** How long a search's offers answer the same requirements again. Default 180 s, as dstack. */
  offersCacheMs?: number;
}

/** What `backend_data` of the provisioning data holds. */
export interface VastAiBackendData {
  /** The ask rented. */
  ask_id: number;
  /** dstack's instance id, the instance's Vast.ai label. */
  label: string;
}

/** A Vast.ai search or rental error meaning "this ask is gone". */
function isAskGone(status: number, error: string | null): boolean {
  return error === 'no_such_ask' || status === 404 || status === 410;
}

/** An outbid spot rental: Vast stops it, and every state it reports is `stopped`. */
function isOutbid(instance: VastAiInstance): boolean {
  return (
    instance.cur_state === 'stopped' &&
    instance.intended_status === 'stopped' &&
    instance.next_state === 'stopped'
  );
}

/**
 * Docker's words for an image it cannot get: unknown, private without (or with wrong) login, a
 * registry that does not resolve. A rental whose pull failed this way never runs, however long
 * its host retries; a pull in progress ("Pulling image …", layer progress) matches none.
 */
const IMAGE_PULL_FAILURE =
  /pull access denied|manifest unknown|manifest for \S+ not found|repository does not exist|failed to resolve reference|unauthorized: |authentication required|no such host/i;

/** The rental's pull error, when its image cannot be pulled (before its container exists); else null. */
function imagePullFailureOf(instance: VastAiInstance): string | null {
  const status = instance.actual_status ?? null;
  if (status !== null && status !== 'loading' && status !== 'created') return null;
  const message = instance.status_msg?.trim();
  return message && IMAGE_PULL_FAILURE.test(message) ? message : null;
}

/** `-u USER -p PASS REGISTRY` for a private image (dstack's `image_login`), else null. */
function imageLogin(image: string, auth: RunJobParams['job']['job_spec']['registry_auth']): string | null {
  if (!auth?.username || !auth.password) return null;
  const first = image.split('/')[0] ?? '';
  const registry = image.includes('/') && (first.includes('.') || first.includes(':')) ? first : 'docker.io';
  return `-u ${auth.username} -p ${auth.password} ${registry}`;
}

/**
 * The job's own variables that can travel in the rental: strings without secret references
 * (`${{ secrets.X }}` is interpolated by the server only into what it sends the runner, which sets
 * the job's whole environment at submit anyway).
 */
function plainJobEnv(env: unknown): Record<string, string> {
  if (typeof env !== 'object' || env === null) return {};
  return Object.fromEntries(
    Object.entries(env as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string' && !entry[1].includes('${{'),
    ),
  );
}

/**
 * Runs each job in a Vast.ai rental of the job's own image, whose entrypoint (core's
 * `buildContainerEntrypoint`) downloads the runner's portable runtime and starts the runner with
 * its SSH port published; the server logs in there with the project key.
 */
export class VastAiCompute implements Compute {
  readonly type = VAST_AI_BACKEND_TYPE;
  readonly capabilities = VAST_AI_CAPABILITIES;
  readonly config: VastAiConfig;
  readonly #api: VastAiApi;
  readonly #provider: VastAiCatalogProvider;
  readonly #offers: OffersCache;

  constructor(settings: VastAiBackendSettings) {
    this.config = settings.config;
    const endpointUrl = settings.config.endpoint_url ?? VAST_AI_DEFAULT_ENDPOINT_URL;
    this.#api = new VastAiApi({
      endpointUrl: endpointUrl,
      apiKey: settings.config.creds.api_key,
      dispatcher: settings.dispatcher,
      timeoutMs: settings.timeoutMs,
    });
    this.#provider = new VastAiCatalogProvider({
      endpointUrl,
      dispatcher: settings.dispatcher,
      timeoutMs: settings.timeoutMs,
      communityCloud: settings.config.community_cloud ?? true,
      extraFilters: VAST_AI_QUALITY_FILTERS,
    });
    this.#offers = new OffersCache({ ttlMs: settings.offersCacheMs });
  }

  /**
   * The live asks matching the requirements (one search; a failure or `options.signal` aborting
   * it throws, so the plan shows the backend's offers as missing), in Vast's score order, kept to
   * `config.regions`; all available, with the `runner` runtime. A search's answer serves the same
   * requirements for `offersCacheMs` (an ask gone since is a `NoCapacityError` at launch).
   */
  async getOffers(
    requirements: Requirements,
    options: GetOffersOptions = {},
  ): Promise<InstanceOfferWithAvailability[]> {
    return this.#offers.get(requirements, () => this.#searchOffers(requirements, options));
  }

  async #searchOffers(
    requirements: Requirements,
    options: GetOffersOptions,
  ): Promise<InstanceOfferWithAvailability[]> {
    const filter = requirementsToQueryFilter(requirements, { provider: VAST_AI_BACKEND_TYPE });
    // The disk is rented with the ask: price it at the smallest disk the job accepts.
    filter.minDiskSize ??= DEFAULT_DISK_SIZE_RANGE.min ?? undefined;
    const items = await this.#provider.query(filter, { signal: options.signal });
    const offers: InstanceOfferWithAvailability[] = [];
    for (const item of items) {
      if (!matches(item, filter) || !this.#inRegions(item.location)) continue;
      const offer = catalogItemToOffer(item, VAST_AI_BACKEND_TYPE, { requirements });
      if (offer) offers.push(withAvailability(offer, 'available', { instance_runtime: 'runner' }));
    }
    return offers;
  }

  /**
   * Rents the offer's ask with the job's image and the runner entrypoint, labelled with
   * `params.instanceId`: a rental with that label already there is returned instead (a retried
   * launch). An ask that is gone, or a bid Vast refuses, is `NoCapacityError` (the next offer).
   */
  async runJob(params: RunJobParams): Promise<JobProvisioningData> {
    const label = params.instanceId;
    const existing = (await this.#api.listInstances()).find((instance) => instance.label === label);
    if (existing) return this.#provisioningData(params.offer, existing.id, label);
    const offerData = params.offer.backend_data as Partial<VastAiOfferData> | undefined;
    const askId = offerData?.ask_id ?? Number(params.offer.instance.name);
    const spot = params.offer.instance.resources.spot;
    const jobSpec = params.job.job_spec;
    const body: VastAiRentBody = {
      client_id: 'me',
      image: jobSpec.image_name,
      price: spot ? (offerData?.min_bid ?? params.offer.price) : null,
      disk: Math.round(params.offer.instance.resources.disk.size_mib / 1024),
      label,
      env: {
        ...plainJobEnv(jobSpec.env),
        [RUNNER_TOKEN_ENV]: params.agentToken,
        [`-p ${DSTACK_RUNNER_SSH_PORT}:${DSTACK_RUNNER_SSH_PORT}`]: '1',
      },
      user: 'root',
      onstart: '/bin/sh',
      args: [
        '-c',
        buildContainerEntrypoint({
          runtimeDownloadUrl: params.runnerDownloadUrl,
          sshAuthorizedKeys: [params.projectSshPublicKey],
        }),
      ],
      runtype: 'args',
      image_login: imageLogin(jobSpec.image_name, jobSpec.registry_auth),
      python_utf8: false,
      lang_utf8: false,
      use_jupyter_lab: false,
      jupyter_dir: null,
      create_from: null,
      force: false,
    };
    const result = await this.#api.rent(askId, body);
    if (result.success && result.newContract !== null) {
      return this.#provisioningData(params.offer, result.newContract, label);
    }
    if (result.newContract !== null) {
      // A refused bid still leaves a stopped contract behind (dstack PR #4036): end it.
      await this.#api.destroyInstance(String(result.newContract));
      throw new NoCapacityError(`Vast.ai refused the bid on ask ${askId}: ${result.message ?? result.error}`);
    }
    if (isAskGone(result.status, result.error)) {
      throw new NoCapacityError(`Vast.ai ask ${askId} is no longer available`);
    }
    throw new BackendError(
      `Vast.ai did not rent ask ${askId}: ${result.message ?? result.error ?? 'no reason'}`,
    );
  }

  /** Destroys the rental; one Vast.ai no longer knows is gone already. Throttled: asked again later. */
  async terminateInstance(instanceId: string, _region: string, _backendData?: string | null): Promise<void> {
    try {
      await this.#api.destroyInstance(instanceId);
    } catch (error) {
      if (BackendApiCallError.isInstance(error) && error.statusCode === 429) {
        throw new NotYetTerminatedError(`Vast.ai throttled the destruction of ${instanceId}`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /**
   * Looks the rental up once: once it runs with its SSH port mapped, `hostname` is its public IP
   * and `ssh_port` the host port of the runner's 10022. An image that cannot be pulled (which
   * Vast.ai shows as a rental still `loading`, Docker's error in `status_msg`, for as long as
   * its host retries), a container that failed to start, or an outbid rental fails provisioning; an instance not listed yet and throttling change nothing.
   */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    let instance: VastAiInstance | null;
    try {
      instance = await this.#api.getInstance(provisioningData.instance_id);
    } catch (error) {
      if (BackendApiCallError.isInstance(error) && error.isRetryable) return provisioningData;
      throw error;
    }
    if (instance === null) return provisioningData;
    const status = instance.actual_status ?? null;
    const pullFailure = imagePullFailureOf(instance);
    if (pullFailure !== null) {
      throw new ProvisioningError(`the image could not be pulled: ${pullFailure}`);
    }
    if (status === 'created' && (instance.status_msg ?? '').includes(': OCI runtime create failed:')) {
      throw new ProvisioningError(`Vast.ai instance ${instance.id} failed to start: ${instance.status_msg}`);
    }
    if (isOutbid(instance)) {
      throw new ProvisioningError(`Vast.ai instance ${instance.id} was stopped (outbid)`);
    }
    if (status === 'exited' || status === 'offline') {
      throw new ProvisioningError(
        `Vast.ai instance ${instance.id} is ${status}: ${instance.status_msg ?? ''}`.trim(),
      );
    }
    if (status !== 'running') return provisioningData;
    const hostname = instance.public_ipaddr?.trim();
    const hostPort = Number(instance.ports?.[SSH_PORT_KEY]?.[0]?.HostPort);
    if (!hostname || !Number.isInteger(hostPort) || hostPort <= 0) return provisioningData;
    return { ...provisioningData, hostname, ssh_port: hostPort };
  }

  /** The contract's `instanceStatus`: an outbid rental is `interrupted`, a running one `running`. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const instance = await this.#api.getInstance(provisioningData.instance_id);
    if (instance === null) return 'gone';
    if (isOutbid(instance)) return 'interrupted';
    const status = instance.actual_status ?? null;
    return status === null || status === 'loading' || status === 'running' || status === 'created'
      ? 'running'
      : 'gone';
  }

  #inRegions(location: string): boolean {
    const regions = this.config.regions;
    if (!regions) return true;
    const country = location.split('-')[0];
    return regions.some((region) => region === location || region === country);
  }

  #provisioningData(
    offer: InstanceOfferWithAvailability,
    contractId: number,
    label: string,
  ): JobProvisioningData {
    const offerData = offer.backend_data as Partial<VastAiOfferData> | undefined;
    const backendData: VastAiBackendData = {
      ask_id: offerData?.ask_id ?? Number(offer.instance.name),
      label,
    };
    return {
      backend: VAST_AI_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: String(contractId),
      hostname: null,
      internal_ip: null,
      public_ip_enabled: true,
      region: offer.region,
      availability_zone: null,
      price: offer.price,
      username: 'root',
      ssh_port: null,
      dockerized: false,
      backend_data: JSON.stringify(backendData),
    };
  }
}

/** The Vast.ai backend's Compute, for use without a server (tests, scripts). */
export function createVastAiBackend(settings: VastAiBackendSettings): VastAiCompute {
  return new VastAiCompute(settings);
}
