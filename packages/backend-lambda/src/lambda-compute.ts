import { createHash } from 'node:crypto';
import { type Catalog, defaultCatalog } from '@dstack/catalog';
import {
  BackendRateLimitError,
  type Capability,
  type ComputeWithCreateInstance,
  type ComputeWithInstanceVolumes,
  type ComputeWithPrivileged,
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  OffersCache,
  type ProjectSshKeys,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  withAvailability,
} from '@dstack/core';
import type { Dispatcher } from 'undici';
import { LAMBDA_NOT_FOUND_CODE, LambdaApi, type LambdaInstance, lambdaApiError } from './lambda-api.js';
import { openLambdaBootstrap, sealLambdaBootstrap } from './lambda-bootstrap-secret.js';
import { LAMBDA_BACKEND_TYPE, type LambdaConfig } from './lambda-config.js';
import {
  LAMBDA_SSH_PORT,
  LAMBDA_SSH_USER,
  LambdaLoginPendingError,
  runLambdaBootstrap,
} from './lambda-ssh-bootstrap.js';

/**
 * What this Compute implements (dstack's `LambdaCompute`): fleets, privileged runs and instance
 * volumes. No multinode, volumes or gateways, as in dstack.
 */
export const LAMBDA_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
];

/** dstack's longest Lambda instance name. */
const MAX_INSTANCE_NAME_LENGTH = 60;
/** States from which an instance never becomes usable. */
const ENDED_STATES = new Set(['terminating', 'terminated', 'preempted']);

/** Settings of `createLambdaBackend`. */
export interface LambdaBackendSettings {
  /** The backend's config with creds (`LambdaConfig`). Required. */
  config: LambdaConfig;
  /** Where API calls go (tests: an emulator's). Default undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /** The catalog offers come from. Default `@dstack/catalog`'s default catalog. */
  catalog?: Catalog;
  /** How long offers (with Lambda's capacity) are kept. Default 180 s (dstack's). */
  offersCacheMs?: number;
}

/**
 * The Lambda key name of a public key: the last 16 hex digits of its SHA-1 (dstack's), so every
 * project key is registered once per account and found again.
 */
export function lambdaSshKeyName(publicKey: string): string {
  return createHash('sha1').update(publicKey).digest('hex').slice(-16);
}

/**
 * Runs jobs on Lambda Cloud VMs as dstack does: the launch registers the project key and starts
 * the instance from Lambda's stock image (Ubuntu with Docker and NVIDIA's stack); Lambda has no
 * user data, so once the instance is active `updateProvisioningData` logs in as `ubuntu` with the
 * project key and starts the shim (core's bootstrap script, run as root).
 */
export class LambdaCompute
  implements ComputeWithCreateInstance, ComputeWithPrivileged, ComputeWithInstanceVolumes
{
  readonly type = LAMBDA_BACKEND_TYPE;
  readonly capabilities = LAMBDA_CAPABILITIES;
  readonly config: LambdaConfig;
  readonly #api: LambdaApi;
  readonly #catalog: Catalog | undefined;
  readonly #offers: OffersCache;

  constructor(settings: LambdaBackendSettings) {
    this.config = settings.config;
    this.#api = new LambdaApi({
      endpointUrl: settings.config.endpoint_url ?? undefined,
      apiKey: settings.config.creds.api_key,
      dispatcher: settings.dispatcher,
    });
    this.#catalog = settings.catalog;
    this.#offers = new OffersCache({ ttlMs: settings.offersCacheMs });
  }

  /**
   * The catalog's `lambdalabs` rows in the configured regions, each `available` where Lambda's
   * `regions_with_capacity_available` lists its region now and `not_available` elsewhere.
   */
  getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    return this.#offers.get(requirements, async () => {
      const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), LAMBDA_BACKEND_TYPE, {
        requirements,
        locations: this.config.regions ?? null,
      });
      const types = await this.#api.listInstanceTypes();
      return offers.map((offer) => {
        const capacity = types[offer.instance.name]?.regions_with_capacity_available ?? [];
        const available = capacity.some((region) => region.name === offer.region);
        return withAvailability(offer, available ? 'available' : 'not_available');
      });
    });
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Registers the project key (once per account), then launches one instance of the offer's type
   * in its region, named from `instance_id`: an instance of that name already there (a retried
   * launch) is returned instead. Lambda's capacity and quota refusals are `NoCapacityError`.
   * The shim's token travels sealed in `backend_data` to `updateProvisioningData`.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    const projectKey = config.ssh_keys[0];
    if (!projectKey?.private) {
      throw new Error(
        'lambda: the launch needs the project key with its private half (ssh_keys[0].private) to log in',
      );
    }
    const name = generateUniqueBackendName(config.project_name, config.instance_name, {
      maxLength: MAX_INSTANCE_NAME_LENGTH,
      seed: config.instance_id,
    });
    const existing = (await this.#api.listInstances()).find(
      (instance) => instance.name === name && !ENDED_STATES.has(instance.status),
    );
    let instanceId = existing?.id;
    if (instanceId === undefined) {
      const keyName = await this.#registerKey(projectKey.public);
      [instanceId] = await this.#api.launch({
        region_name: offer.region,
        instance_type_name: offer.instance.name,
        ssh_key_names: [keyName],
        file_system_names: [],
        quantity: 1,
        name,
      });
      if (instanceId === undefined) throw new Error('lambda: the launch answered no instance id');
    }
    const bootstrap = sealLambdaBootstrap(
      {
        agent_token: config.agent_token,
        agent_download_url: config.agent_download_url ?? null,
        agent_download_sha256: config.agent_download_sha256 ?? null,
        agent_download_size: config.agent_download_size ?? null,
      },
      projectKey.private,
    );
    return {
      backend: LAMBDA_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      internal_ip: null,
      region: offer.region,
      price: offer.price,
      username: LAMBDA_SSH_USER,
      ssh_port: LAMBDA_SSH_PORT,
      dockerized: true,
      ssh_proxy: null,
      public_ip_enabled: true,
      backend_data: JSON.stringify({ bootstrap }),
    };
  }

  /**
   * Looks the instance up once: still booting, unchanged; active with an address, logs in and
   * starts the shim, then fills `hostname` and `internal_ip` (and drops the sealed bootstrap). A
   * login that does not go through yet (sshd starting) or throttling leaves the data unchanged for
   * the next poll; an instance that is gone or ending is a `ProvisioningError`.
   */
  async updateProvisioningData(
    provisioningData: JobProvisioningData,
    projectSshKeys: ProjectSshKeys,
  ): Promise<JobProvisioningData> {
    let instance: LambdaInstance | null;
    try {
      instance = await this.#api.getInstance(provisioningData.instance_id);
    } catch (error) {
      if (BackendRateLimitError.isInstance(error)) return provisioningData;
      throw error;
    }
    if (instance === null)
      throw new ProvisioningError(`lambda instance ${provisioningData.instance_id} is gone`);
    if (ENDED_STATES.has(instance.status)) {
      throw new ProvisioningError(`lambda instance ${instance.id} is ${instance.status}`);
    }
    if (instance.status === 'booting' || !instance.ip) return provisioningData;
    const sealed = sealedBootstrapOf(provisioningData.backend_data);
    if (sealed !== null) {
      try {
        await runLambdaBootstrap({
          host: instance.ip,
          privateKey: projectSshKeys.privateKey,
          bootstrap: openLambdaBootstrap(sealed, projectSshKeys.privateKey),
        });
      } catch (error) {
        if (error instanceof LambdaLoginPendingError) return provisioningData;
        throw new ProvisioningError(`lambda instance ${instance.id}: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
    return {
      ...provisioningData,
      hostname: instance.ip,
      internal_ip: instance.private_ip ?? null,
      backend_data: null,
    };
  }

  /** Terminates the instance; one Lambda no longer knows or that is already ending is fine. */
  async terminateInstance(instanceId: string): Promise<void> {
    const failure = await this.#api.terminate([instanceId]);
    if (failure === null) return;
    if (failure.status === 404 || failure.code === LAMBDA_NOT_FOUND_CODE) return;
    const instance = await this.#api.getInstance(instanceId);
    if (instance === null || ENDED_STATES.has(instance.status)) return;
    throw lambdaApiError(failure, 'instance-operations/terminate');
  }

  /** What Lambda says of an instance whose agents went silent. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const instance = await this.#api.getInstance(provisioningData.instance_id);
    if (instance === null || instance.status === 'terminated' || instance.status === 'terminating')
      return 'gone';
    if (instance.status === 'preempted') return 'interrupted';
    return 'running';
  }

  /** The account's key name for the project key, registering the key when the account lacks it. */
  async #registerKey(publicKey: string): Promise<string> {
    const name = lambdaSshKeyName(publicKey.trim());
    const keys = await this.#api.listSshKeys();
    if (!keys.some((key) => key.name === name)) await this.#api.addSshKey(name, publicKey.trim());
    return name;
  }
}

/** The sealed bootstrap of `createInstance`'s `backend_data`, or null when there is none. */
function sealedBootstrapOf(backendData: string | null | undefined): string | null {
  if (!backendData) return null;
  try {
    const bootstrap = (JSON.parse(backendData) as { bootstrap?: unknown }).bootstrap;
    return typeof bootstrap === 'string' ? bootstrap : null;
  } catch {
    return null;
  }
}

/** The lambda backend's Compute, for use without a server (tests, scripts). */
export function createLambdaBackend(settings: LambdaBackendSettings): LambdaCompute {
  return new LambdaCompute(settings);
}
