import { defaultCatalog } from '@dstack/catalog';
import {
  type Capability,
  type CatalogQueryable,
  type ComputeWithCreateInstance,
  type ComputeWithGateways,
  type ComputeWithInstanceVolumes,
  type ComputeWithPlacementGroups,
  type ComputeWithPrivileged,
  type ComputeWithReservations,
  type ComputeWithVolumes,
  type GatewayReplicaConfiguration,
  type GatewayReplicaProvisioningData,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOffer,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  type PlacementGroup,
  type PlacementGroupProvisioningData,
  type ProjectSshKeys,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  type Volume,
  type VolumeAttachmentData,
  type VolumeProvisioningData,
} from '@dstack/core';
import type { Dispatcher } from 'undici';
import { GcpComputeApi } from './gcp-api.js';
import { GCP_BACKEND_TYPE, GCP_COMPUTE_URL, type GcpConfig } from './gcp-config.js';
import { credsAccessTokenSource } from './gcp-credentials.js';
import { createGcpGatewayInstance } from './gcp-gateways.js';
import { GcpInstanceLauncher, getGcpInstance, operationError, parseGcpBackendData } from './gcp-launch.js';
import {
  collapseZones,
  GCP_CONFIGURABLE_DISK_SIZE,
  type GcpQuota,
  isSupportedOffer,
  offerWithQuota,
  regionOfZone,
} from './gcp-offers.js';
import type { GcpOperationResource } from './gcp-operations.js';
import {
  createGcpPlacementGroup,
  deleteGcpPlacementGroup,
  isSuitableGcpPlacementGroup,
} from './gcp-placement-groups.js';
import {
  GcpReservationLookups,
  type GcpZoneReservation,
  offerMatchesReservation,
  reservationHasCapacity,
  reservationReference,
} from './gcp-reservations.js';
import { isNotFound, typedGoogleError } from './gcp-rest.js';
import { GcpVolumes } from './gcp-volumes.js';

/**
 * What this Compute implements, declared on the plugin descriptor too: fleets
 * (`createInstance`), privileged runs and instance (host path) volumes, as every shim backend;
 * `multinode`: instances of one VPC network reach each other on their internal IPs (dstack's too);
 * `placement-groups`: a compact placement resource policy per cluster fleet; `volumes`: persistent disks;
 * `gateways`: gateway instances (`gcp-gateways.ts`); `reservations`: zonal reservations
 * (`gcp-reservations.ts`).
 */
export const GCP_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
  'multinode',
  'placement-groups',
  'volumes',
  'gateways',
  'reservations',
];

/** Settings of `createGcpBackend`. */
export interface GcpBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: GcpConfig;
  /** Where offers come from. Default: the process's `defaultCatalog()` (the server's: gpuhunt's published catalogs, else the bundled snapshot). */
  catalog?: CatalogQueryable;
  /** undici dispatcher for every Compute call (STYLE §9). Default undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /** How long a launch waits on its insert operation in a zone before returning (dstack: 30 s). */
  operationWaitMs?: number;
  /** Pause between reads of a pending operation. Default 1000 ms. */
  operationPollIntervalMs?: number;
}

/** Instance statuses on the way to RUNNING. */
const STARTING_STATUSES: ReadonlySet<string> = new Set(['PROVISIONING', 'STAGING', 'REPAIRING']);

/**
 * Runs jobs on Compute Engine VMs: `createInstance` inserts an instance whose cloud-init (core's
 * VM bootstrap, as `user-data` metadata) starts the shim, and `runJob` is `createInstance` for the job.
 */
export class GcpCompute
  implements
    ComputeWithCreateInstance,
    ComputeWithPrivileged,
    ComputeWithInstanceVolumes,
    ComputeWithPlacementGroups,
    ComputeWithVolumes,
    ComputeWithGateways,
    ComputeWithReservations
{
  readonly type = GCP_BACKEND_TYPE;
  readonly capabilities = GCP_CAPABILITIES;
  readonly config: GcpConfig;
  readonly #api: GcpComputeApi;
  /** Undefined: the process's `defaultCatalog()`, looked up on each query (the server sets it at start). */
  readonly #catalog: CatalogQueryable | undefined;
  readonly #pollIntervalMs: number;
  readonly #reservations: GcpReservationLookups;
  readonly #launcher: GcpInstanceLauncher;
  readonly #volumes: GcpVolumes;

  constructor(settings: GcpBackendSettings) {
    this.config = settings.config;
    this.#api = new GcpComputeApi({
      baseUrl: settings.config.endpoint_url ?? GCP_COMPUTE_URL,
      project: settings.config.project_id,
      tokens: credsAccessTokenSource(settings.config.creds),
      dispatcher: settings.dispatcher,
    });
    this.#catalog = settings.catalog;
    this.#reservations = new GcpReservationLookups(this.#api);
    this.#pollIntervalMs = settings.operationPollIntervalMs ?? 1000;
    this.#launcher = new GcpInstanceLauncher({
      api: this.#api,
      config: this.config,
      reservations: this.#reservations,
      zonesOf: (region) => this.#zonesOf(region),
      operationWaitMs: settings.operationWaitMs ?? 30_000,
      pollIntervalMs: this.#pollIntervalMs,
    });
    this.#volumes = new GcpVolumes({
      api: this.#api,
      config: this.config,
      zonesOf: (region) => this.#zonesOf(region),
      operations: { pollIntervalMs: this.#pollIntervalMs },
    });
  }

  /** The Compute Engine client of this backend (the configurator's checks use it too). */
  get api(): GcpComputeApi {
    return this.#api;
  }

  /**
   * The catalog's GCP offers in the configured regions, one per region with its zones (cheapest
   * first), each `no_quota` when the region's GPU quota cannot take it.
   */
  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const regions = this.config.regions ? new Set(this.config.regions) : undefined;
    const perZone = await getCatalogOffers(this.#catalog ?? defaultCatalog(), GCP_BACKEND_TYPE, {
      requirements,
      configurableDiskSize: GCP_CONFIGURABLE_DISK_SIZE,
      extraFilter: (offer) =>
        isSupportedOffer(offer) && (regions === undefined || regions.has(regionOfZone(offer.region))),
    });
    const quotas = await this.#regionQuotas().catch(() => undefined);
    const offers = collapseZones(perZone).map(({ offer, zones }) =>
      offerWithQuota(offer, zones, quotas?.get(offer.region)),
    );
    if (!requirements.reservation) return offers;
    const reference = reservationReference(requirements.reservation, this.config.project_id);
    const byZone = reference ? await this.#typed(() => this.#reservations.find(reference)) : new Map();
    return offers.flatMap((offer) => {
      const reserved = inReservation(offer, byZone);
      return reserved ? [reserved] : [];
    });
  }

  /**
   * The contract's reason for a reservation with no offers: no READY reservation of that name
   * that requires specific targeting, or it is full in every zone it is in.
   */
  async reservationUnusableReason(reservation: string): Promise<string | null> {
    const reference = reservationReference(reservation, this.config.project_id);
    if (!reference)
      return `${JSON.stringify(reservation)} is neither a reservation name nor projects/P/reservations/N`;
    const byZone = [...(await this.#typed(() => this.#reservations.find(reference))).values()];
    if (byZone.length === 0) {
      return `no READY reservation ${reference.name} with specificReservationRequired in project ${reference.project}`;
    }
    if (byZone.some(reservationHasCapacity)) return null;
    return byZone
      .map(
        (each) =>
          `reservation ${each.name} in ${each.zone} has no instance free (${each.inUse} of ${each.assured} in use)`,
      )
      .join('; ');
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Launches the instance: the one a previous launch with this `instance_id` made when there is
   * one (it has the same name), else `instances.insert` in each of the offer's zones in turn,
   * waiting on the operation: no capacity, no quota or a type the zone lacks move to the next
   * zone, then `NoCapacityError`. Throttling that outlasts the retries is `BackendRateLimitError`.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    try {
      return await this.#launcher.launch(offer, config, placementGroup);
    } catch (error) {
      throw typedGoogleError(error);
    }
  }

  /** A compact placement resource policy named as the server names the group, in its region. */
  async createPlacementGroup(
    placementGroup: PlacementGroup,
    _masterOffer: InstanceOffer,
  ): Promise<PlacementGroupProvisioningData> {
    return this.#typed(() =>
      createGcpPlacementGroup(this.#api, placementGroup, { pollIntervalMs: this.#pollIntervalMs }),
    );
  }

  async deletePlacementGroup(placementGroup: PlacementGroup): Promise<void> {
    return this.#typed(() =>
      deleteGcpPlacementGroup(this.#api, placementGroup, { pollIntervalMs: this.#pollIntervalMs }),
    );
  }

  isSuitablePlacementGroup(placementGroup: PlacementGroup, offer: InstanceOffer): boolean {
    return isSuitableGcpPlacementGroup(placementGroup, offer);
  }

  /** dstack's: an instance in a reservation takes the reservation's placement, not ours. */
  arePlacementGroupsCompatibleWithReservations(): boolean {
    return false;
  }

  registerVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.#typed(() => this.#volumes.register(volume));
  }

  createVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.#typed(() => this.#volumes.create(volume));
  }

  deleteVolume(volume: Volume): Promise<void> {
    return this.#typed(() => this.#volumes.delete(volume));
  }

  attachVolume(volume: Volume, provisioningData: JobProvisioningData): Promise<VolumeAttachmentData> {
    return this.#typed(() => this.#volumes.attach(volume, provisioningData));
  }

  detachVolume(volume: Volume, provisioningData: JobProvisioningData): Promise<void> {
    return this.#typed(() => this.#volumes.detach(volume, provisioningData));
  }

  isVolumeDetached(volume: Volume, provisioningData: JobProvisioningData): Promise<boolean> {
    return this.#typed(() => this.#volumes.isDetached(volume, provisioningData));
  }

  /** Throttling outlasting the retries as core's `BackendRateLimitError`. */
  /** A gateway instance (`gcp-gateways.ts`), running with its address when this returns. */
  createGatewayReplica(configuration: GatewayReplicaConfiguration): Promise<GatewayReplicaProvisioningData> {
    return this.#typed(() =>
      createGcpGatewayInstance(
        {
          api: this.#api,
          config: this.config,
          zonesOf: (region) => this.#zonesOf(region),
          pollIntervalMs: this.#pollIntervalMs,
        },
        configuration,
      ),
    );
  }

  terminateGatewayReplica(
    instanceId: string,
    configuration: GatewayReplicaConfiguration,
    backendData?: string | null,
  ): Promise<void> {
    return this.#typed(() => this.terminateInstance(instanceId, configuration.region, backendData));
  }

  async #typed<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw typedGoogleError(error);
    }
  }

  /**
   * Deletes the instance; one Compute no longer knows (404) is gone already. Deleting an
   * instance that is stopping or terminated (a preempted spot instance) is fine.
   */
  async terminateInstance(instanceId: string, region: string, backendData?: string | null): Promise<void> {
    const zone = parseGcpBackendData(backendData).zone;
    const zones = zone ? [zone] : await this.#zonesOf(region);
    for (const each of zones) {
      try {
        await this.#api.delete(`zones/${each}/instances/${encodeURIComponent(instanceId)}`);
      } catch (error) {
        if (isNotFound(error)) continue;
        throw error;
      }
    }
  }

  /**
   * Looks the instance up once: `hostname` (its external IP, or the internal one without public
   * IPs) once it is RUNNING with that address. An instance that is gone (with its insert's late
   * error when there is one) or stopping fails provisioning.
   */
  async updateProvisioningData(
    provisioningData: JobProvisioningData,
    _projectSshKeys?: ProjectSshKeys,
  ): Promise<JobProvisioningData> {
    const data = parseGcpBackendData(provisioningData.backend_data);
    const zone = data.zone ?? provisioningData.availability_zone ?? '';
    const instance = await getGcpInstance(this.#api, zone, provisioningData.instance_id);
    if (!instance) {
      const failure = data.operation ? await this.#operationFailure(zone, data.operation) : undefined;
      throw new ProvisioningError(
        `Instance ${provisioningData.instance_id} no longer exists${failure ? ` (${failure.code}: ${failure.message})` : ''}`,
      );
    }
    if (STARTING_STATUSES.has(instance.status)) return provisioningData;
    if (instance.status !== 'RUNNING') {
      throw new ProvisioningError(`Instance ${provisioningData.instance_id} is ${instance.status}`);
    }
    const nic = instance.networkInterfaces?.[0];
    const internalIp = nic?.networkIP;
    const hostname = provisioningData.public_ip_enabled ? nic?.accessConfigs?.[0]?.natIP : internalIp;
    if (!hostname) return provisioningData;
    return { ...provisioningData, hostname, internal_ip: internalIp ?? null, ssh_port: 22 };
  }

  /**
   * The contract's `instanceStatus`: Compute's view of an instance whose agents stopped answering.
   * A spot instance Compute preempted (a `compute.instances.preempted` operation) is
   * `interrupted`; one stopping, terminated or deleted otherwise is `gone`.
   */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const zone =
      parseGcpBackendData(provisioningData.backend_data).zone ?? provisioningData.availability_zone ?? '';
    const name = provisioningData.instance_id;
    const instance = await getGcpInstance(this.#api, zone, name);
    if (instance && (STARTING_STATUSES.has(instance.status) || instance.status === 'RUNNING'))
      return 'running';
    return (await this.#wasPreempted(zone, name, instance?.id)) ? 'interrupted' : 'gone';
  }

  async #wasPreempted(zone: string, name: string, id: string | undefined): Promise<boolean> {
    const operations = await this.#api.list<GcpOperationResource>(`zones/${zone}/operations`, {
      filter: 'operationType = "compute.instances.preempted"',
    });
    return operations.some((operation) =>
      id !== undefined
        ? operation.targetId === id
        : (operation.targetLink ?? '').endsWith(`/instances/${name}`),
    );
  }

  async #operationFailure(zone: string, name: string) {
    try {
      return operationError(await this.#api.get<GcpOperationResource>(`zones/${zone}/operations/${name}`));
    } catch {
      return undefined;
    }
  }

  /** The zones of a region, from Compute (when an offer or a record has none). */
  async #zonesOf(region: string): Promise<string[]> {
    const answer = await this.#api.get<{ zones?: string[] }>(`regions/${region}`);
    return (answer.zones ?? [])
      .map((link) => link.split('/').at(-1) ?? '')
      .filter(Boolean)
      .sort();
  }

  /** Every region's quotas by metric (one `regions.list`). */
  async #regionQuotas(): Promise<Map<string, Map<string, GcpQuota>>> {
    const regions = await this.#api.list<{ name: string; quotas?: GcpQuota[] }>('regions');
    return new Map(
      regions.map((region) => [
        region.name,
        new Map((region.quotas ?? []).map((quota) => [quota.metric, quota])),
      ]),
    );
  }
}

/**
 * dstack's reservation modifier: an on-demand offer in the zones whose reservation it matches,
 * narrowed to those with room (`not_available` in all matching zones when none has room), or
 * undefined when no zone's reservation fits it.
 */
function inReservation(
  offer: InstanceOfferWithAvailability,
  byZone: ReadonlyMap<string, GcpZoneReservation>,
): InstanceOfferWithAvailability | undefined {
  if (offer.instance.resources.spot) return undefined;
  const matching = (offer.availability_zones ?? []).filter((zone) => {
    const reservation = byZone.get(zone);
    return reservation !== undefined && offerMatchesReservation(offer, reservation);
  });
  if (matching.length === 0) return undefined;
  const withRoom = matching.filter((zone) => reservationHasCapacity(byZone.get(zone) as GcpZoneReservation));
  return withRoom.length > 0
    ? { ...offer, availability_zones: withRoom }
    : { ...offer, availability_zones: matching, availability: 'not_available' };
}

/** The gcp backend's Compute, for use without a server (tests, scripts). */
export function createGcpBackend(settings: GcpBackendSettings): GcpCompute {
  return new GcpCompute(settings);
}
