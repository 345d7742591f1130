import { type Catalog, defaultCatalog } from '@dstack/catalog';
import {
  BackendAuthenticationError,
  BackendRateLimitError,
  buildVmBootstrapScript,
  type Capability,
  type ComputeWithCreateInstance,
  type ComputeWithInstanceVolumes,
  type ComputeWithPrivileged,
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  NoCapacityError,
  NotYetTerminatedError,
  OffersCache,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  withAvailability,
} from '@dstack/core';
import type { Dispatcher } from 'undici';
import { VerdaApi, VerdaApiFailure, verdaApiError } from './verda-api.js';
import { VERDA_BACKEND_TYPE, type VerdaConfig } from './verda-config.js';

/** dstack's: fleets, privileged runs and instance volumes. */
export const VERDA_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
];

const MAX_INSTANCE_NAME_LENGTH = 60;
/** The OS volume is at least the image's 50 GB (dstack's `CONFIGURABLE_DISK_SIZE`). */
export const VERDA_CONFIGURABLE_DISK_SIZE = { min: 50, max: null };
/** States an instance may still come up from (dstack's). */
const PENDING_STATES = new Set(['ordered', 'provisioning']);
/** Verda's answers to deleting an instance that is already gone. */
const GONE_MESSAGES = new Set(['Invalid instance id', "Can't discontinue a discontinued instance"]);
const PROVISIONING_MESSAGE = "Can't discontinue a provisioning instance";

/** dstack's images: Ubuntu 22.04 + CUDA 12.0 + Docker for V100 and A6000, else Ubuntu 24.04 + CUDA 13.0 + Docker. */
export function verdaImageId(offer: InstanceOfferWithAvailability): string {
  const gpu = offer.instance.resources.gpus[0]?.name;
  return gpu === 'V100' || gpu === 'A6000'
    ? '2088da25-bb0d-41cc-a191-dccae45d96fd'
    : '2404f580-1300-1111-82b3-f199fb9b701b';
}

/** What `backend_data` keeps: the instance's own startup script and SSH keys, deleted with it. */
interface VerdaBackendData {
  startup_script_id?: string | null;
  ssh_key_ids?: string[] | null;
}

export interface VerdaBackendSettings {
  config: VerdaConfig;
  dispatcher?: Dispatcher;
  catalog?: Catalog;
  /** Default 180 s (dstack's). */
  offersCacheMs?: number;
}

/** Verda's failures as core's errors; anything else as it is. */
function typed(error: unknown): unknown {
  return error instanceof VerdaApiFailure ? verdaApiError(error) : error;
}

/**
 * Runs jobs on Verda VMs as dstack does: each launch registers the instance's SSH keys and a
 * startup script (core's bootstrap script: the agent token, the runtime download, the shim) and
 * deploys an instance from Verda's Ubuntu + CUDA + Docker image that runs it at first boot; the
 * keys and the script are deleted with the instance.
 */
export class VerdaCompute
  implements ComputeWithCreateInstance, ComputeWithPrivileged, ComputeWithInstanceVolumes
{
  readonly type = VERDA_BACKEND_TYPE;
  readonly capabilities = VERDA_CAPABILITIES;
  readonly config: VerdaConfig;
  readonly #api: VerdaApi;
  readonly #catalog: Catalog | undefined;
  readonly #offers: OffersCache;

  constructor(settings: VerdaBackendSettings) {
    this.config = settings.config;
    this.#api = new VerdaApi({
      endpointUrl: settings.config.endpoint_url ?? undefined,
      clientId: settings.config.creds.client_id,
      clientSecret: settings.config.creds.client_secret,
      dispatcher: settings.dispatcher,
    });
    this.#catalog = settings.catalog;
    this.#offers = new OffersCache({ ttlMs: settings.offersCacheMs });
  }

  /** The catalog's `verda` rows in the configured regions, `available` where Verda's availability lists the type now. */
  getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    return this.#offers.get(requirements, async () => {
      const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), VERDA_BACKEND_TYPE, {
        requirements,
        locations: this.config.regions ?? null,
        configurableDiskSize: VERDA_CONFIGURABLE_DISK_SIZE,
      });
      const available = new Set<string>();
      try {
        for (const spot of [false, true]) {
          for (const location of await this.#api.availabilities(spot)) {
            for (const name of location.availabilities)
              available.add(`${name}|${location.location_code}|${spot}`);
          }
        }
      } catch (error) {
        throw typed(error);
      }
      return offers.map((offer) =>
        withAvailability(
          offer,
          available.has(`${offer.instance.name}|${offer.region}|${offer.instance.resources.spot}`)
            ? 'available'
            : 'not_available',
        ),
      );
    });
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Deploys the instance (named from `instance_id`: an instance of that name already there, from a
   * retried launch, is returned instead) with its own SSH keys and startup script; on a failed
   * deploy both are deleted again. Verda's refusals of the deploy are `NoCapacityError` (as
   * dstack's), but authentication and throttling.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    const name = generateUniqueBackendName(config.project_name, config.instance_name, {
      maxLength: MAX_INSTANCE_NAME_LENGTH,
      seed: config.instance_id,
    });
    const existing = (
      await this.#api.listInstances().catch((error: unknown) => Promise.reject(typed(error)))
    ).find(
      (instance) =>
        instance.hostname === name && instance.status !== 'discontinued' && instance.status !== 'deleting',
    );
    const backendData: VerdaBackendData = {
      startup_script_id: (existing?.startup_script_id as string | undefined) ?? null,
      ssh_key_ids: existing?.ssh_key_ids ?? [],
    };
    let instanceId = existing?.id;
    if (instanceId === undefined) {
      const keyIds: string[] = [];
      let scriptId: string | null = null;
      try {
        for (const [index, key] of config.ssh_keys.entries()) {
          keyIds.push(await this.#api.createSshKey(`${name}-${index}.key`, key.public.trim()));
        }
        scriptId = await this.#api.createStartupScript(`${name}.sh`, buildVmBootstrapScript(config));
        instanceId = await this.#api.deployInstance({
          instance_type: offer.instance.name,
          image: verdaImageId(offer),
          ssh_key_ids: keyIds,
          startup_script_id: scriptId,
          hostname: name,
          description: name,
          location_code: offer.region,
          os_volume: { name: 'OS volume', size: Math.round(offer.instance.resources.disk.size_mib / 1024) },
          is_spot: offer.instance.resources.spot,
          pricing: 'FIXED_PRICE',
        });
      } catch (error) {
        await this.#deleteOwnResources({ startup_script_id: scriptId, ssh_key_ids: keyIds }).catch(
          () => undefined,
        );
        const failure = typed(error);
        if (BackendAuthenticationError.isInstance(failure) || BackendRateLimitError.isInstance(failure))
          throw failure;
        if (error instanceof VerdaApiFailure) throw new NoCapacityError(error.message, { cause: error });
        throw failure;
      }
      backendData.startup_script_id = scriptId;
      backendData.ssh_key_ids = keyIds;
    }
    return {
      backend: VERDA_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      internal_ip: null,
      region: offer.region,
      price: offer.price,
      username: 'root',
      ssh_port: 22,
      dockerized: true,
      ssh_proxy: null,
      public_ip_enabled: true,
      backend_data: JSON.stringify(backendData),
    };
  }

  /** Looks the instance up once: `running` fills `hostname`; a state it will not come up from fails it. */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    let instance: Awaited<ReturnType<VerdaApi['getInstance']>>;
    try {
      instance = await this.#api.getInstance(provisioningData.instance_id);
    } catch (error) {
      const failure = typed(error);
      if (BackendRateLimitError.isInstance(failure)) return provisioningData;
      throw failure;
    }
    if (instance === null) throw new ProvisioningError('Verda instance not found');
    if (instance.status === 'running' && instance.ip) {
      return { ...provisioningData, hostname: instance.ip, internal_ip: instance.ip };
    }
    if (instance.status === 'running' || PENDING_STATES.has(instance.status)) return provisioningData;
    throw new ProvisioningError(`Unexpected Verda instance status: ${JSON.stringify(instance.status)}`);
  }

  /** Deletes the instance permanently, then its startup script and SSH keys; gone is fine. */
  async terminateInstance(instanceId: string, _region: string, backendData?: string | null): Promise<void> {
    try {
      await this.#api.deleteInstances([instanceId]);
    } catch (error) {
      if (!(error instanceof VerdaApiFailure)) throw error;
      if (error.apiMessage === PROVISIONING_MESSAGE) {
        throw new NotYetTerminatedError(
          'Waiting for the Verda instance to leave provisioning: Verda refuses to delete it before',
          {
            cause: error,
          },
        );
      }
      if (!GONE_MESSAGES.has(error.apiMessage)) throw verdaApiError(error);
    }
    await this.#deleteOwnResources(parseBackendData(backendData)).catch((error: unknown) =>
      Promise.reject(typed(error)),
    );
  }

  /** Deletes the instance's startup script and keys; ones already gone (404) are fine. */
  async #deleteOwnResources(data: VerdaBackendData): Promise<void> {
    const ignoreGone = (error: unknown) => {
      if (!(error instanceof VerdaApiFailure && error.status === 404)) throw error;
    };
    if (data.startup_script_id)
      await this.#api.deleteStartupScripts([data.startup_script_id]).catch(ignoreGone);
    if (data.ssh_key_ids?.length) await this.#api.deleteSshKeys(data.ssh_key_ids).catch(ignoreGone);
  }
}

function parseBackendData(raw: string | null | undefined): VerdaBackendData {
  if (!raw) return {};
  try {
    return JSON.parse(raw) as VerdaBackendData;
  } catch {
    return {};
  }
}

/** The verda backend's Compute, for use without a server (tests, scripts). */
export function createVerdaBackend(settings: VerdaBackendSettings): VerdaCompute {
  return new VerdaCompute(settings);
}
