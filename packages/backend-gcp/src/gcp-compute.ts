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
  NoCapacityError,
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
import {
  GCP_IMAGE_USER,
  GCP_INSTANCE_NETWORK_TAG,
  insertRequestId,
  instanceBody,
  instanceNameFor,
  networkName,
} from './gcp-instance-body.js';
import {
  collapseZones,
  GCP_CONFIGURABLE_DISK_SIZE,
  type GcpQuota,
  isSupportedOffer,
  offerWithQuota,
  regionOfZone,
} from './gcp-offers.js';
import {
  createGcpPlacementGroup,
  deleteGcpPlacementGroup,
  isSuitableGcpPlacementGroup,
  resourcePolicyReference,
} from './gcp-placement-groups.js';
import {
  GcpReservationLookups,
  type GcpReservationReference,
  type GcpZoneReservation,
  offerMatchesReservation,
  reservationAffinity,
  reservationHasCapacity,
  reservationReference,
} from './gcp-reservations.js';
import { GcpApiCallError, isNotFound, typedGoogleError } from './gcp-rest.js';
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

/**
 * Errors of an insert (in its operation, or answered at once) after which the next zone may
 * succeed: no capacity, no quota, a machine or accelerator type the zone lacks.
 */
export const GCP_NEXT_ZONE_ERROR_CODES: ReadonlySet<string> = new Set([
  'ZONE_RESOURCE_POOL_EXHAUSTED',
  'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS',
  'QUOTA_EXCEEDED',
  'RESOURCE_NOT_FOUND',
  'UNSUPPORTED_OPERATION',
]);

/** What `backend_data` of the provisioning data holds. */
export interface GcpBackendData {
  readonly zone: string;
  /** The insert operation, whose late error explains an instance that vanished while provisioning. */
  readonly operation?: string;
  readonly market?: 'on-demand' | 'spot';
}

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

interface GcpOperation {
  name: string;
  status: 'PENDING' | 'RUNNING' | 'DONE';
  targetId?: string;
  targetLink?: string;
  operationType?: string;
  error?: { errors?: { code?: string; message?: string }[] };
}

interface GcpInstance {
  id: string;
  name: string;
  status: string;
  zone: string;
  networkInterfaces?: { networkIP?: string; accessConfigs?: { natIP?: string }[] }[];
}

/** Instance statuses on the way to RUNNING. */
const STARTING_STATUSES: ReadonlySet<string> = new Set(['PROVISIONING', 'STAGING', 'REPAIRING']);

/** `backend_data` parsed; fields missing when it is absent or not ours. */
export function parseGcpBackendData(data: string | null | undefined): Partial<GcpBackendData> {
  try {
    return (JSON.parse(data ?? '{}') as Partial<GcpBackendData>) ?? {};
  } catch {
    return {};
  }
}

/** The first error code of a DONE operation, with its message. */
function operationError(operation: GcpOperation): { code: string; message: string } | undefined {
  const first = operation.error?.errors?.[0];
  if (!operation.error) return undefined;
  return { code: first?.code ?? 'UNKNOWN', message: first?.message ?? 'the operation failed' };
}

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
  readonly #operationWaitMs: number;
  readonly #pollIntervalMs: number;
  readonly #reservations: GcpReservationLookups;
  readonly #volumes: GcpVolumes;
  #firewall: Promise<void> | undefined;

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
    this.#operationWaitMs = settings.operationWaitMs ?? 30_000;
    this.#pollIntervalMs = settings.operationPollIntervalMs ?? 1000;
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
      return await this.#createInstance(offer, config, placementGroup);
    } catch (error) {
      throw typedGoogleError(error);
    }
  }

  async #createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    const name = instanceNameFor(config);
    const resourcePolicy = placementGroup
      ? resourcePolicyReference(
          this.config.project_id,
          placementGroup.configuration.region,
          placementGroup.name,
        )
      : undefined;
    const zones = offer.availability_zones?.length
      ? offer.availability_zones
      : await this.#zonesOf(offer.region);
    const launched = await this.#findLaunched(name, zones);
    if (launched) return this.#provisioningData(offer, launched.zone, name, undefined);

    const reservation = config.reservation ? await this.#launchReservation(config.reservation) : undefined;
    await this.#ensureFirewall();
    const failures: string[] = [];
    for (const zone of zones) {
      // dstack's: only zones where the reservation is, with room now.
      const reserved = reservation?.byZone.get(zone);
      if (reservation && (!reserved || !reservationHasCapacity(reserved))) {
        failures.push(
          `${zone}: ${reserved ? `reservation ${reserved.name} is full` : `no reservation ${reservation.reference.name}`}`,
        );
        continue;
      }
      const body = {
        ...instanceBody({ gcpConfig: this.config, offer, config, name, zone, resourcePolicy }),
        ...(reservation ? { reservationAffinity: reservationAffinity(reservation.reference) } : {}),
      };
      let operation: GcpOperation;
      try {
        operation = await this.#api.post<GcpOperation>(`zones/${zone}/instances`, body, {
          requestId: insertRequestId(config.instance_id, zone),
        });
      } catch (error) {
        if (error instanceof GcpApiCallError && error.statusCode === 409) {
          // This launch's instance already exists in this zone (made by a retry we did not see finish).
          return this.#provisioningData(offer, zone, name, undefined);
        }
        // 404: the machine or accelerator type is not in this zone; 403 quotaExceeded; 503 capacity;
        // the reservation filled up since it was looked up.
        if (
          error instanceof GcpApiCallError &&
          (error.statusCode === 404 ||
            error.statusCode === 503 ||
            (error.statusCode === 403 && /quota/i.test(`${error.reason} ${error.message}`)) ||
            (reservation !== undefined && /not have enough resources/.test(error.message)))
        ) {
          failures.push(`${zone}: ${error.reason ?? error.statusCode}`);
          continue;
        }
        throw error;
      }
      const settled = await this.#waitForOperation(zone, operation);
      const failure = settled.status === 'DONE' ? operationError(settled) : undefined;
      if (!failure) return this.#provisioningData(offer, zone, name, operation.name);
      if (!GCP_NEXT_ZONE_ERROR_CODES.has(failure.code)) {
        throw new ProvisioningError(
          `Inserting ${name} in ${zone} failed: ${failure.code}: ${failure.message}`,
        );
      }
      failures.push(`${zone}: ${failure.code}`);
    }
    const spot = offer.instance.resources.spot ? ' (spot)' : '';
    throw new NoCapacityError(
      `No capacity for ${offer.instance.name}${spot} in ${offer.region}: ${failures.join(', ')}`,
    );
  }

  /** The reservation a launch consumes, looked up afresh; a name that cannot be one is no capacity. */
  async #launchReservation(
    reservation: string,
  ): Promise<{ reference: GcpReservationReference; byZone: Map<string, GcpZoneReservation> }> {
    const reference = reservationReference(reservation, this.config.project_id);
    if (!reference) throw new NoCapacityError(`${JSON.stringify(reservation)} names no GCP reservation`);
    return { reference, byZone: await this.#reservations.find(reference, true) };
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
    const instance = await this.#getInstance(zone, provisioningData.instance_id);
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
    const instance = await this.#getInstance(zone, name);
    if (instance && (STARTING_STATUSES.has(instance.status) || instance.status === 'RUNNING'))
      return 'running';
    return (await this.#wasPreempted(zone, name, instance?.id)) ? 'interrupted' : 'gone';
  }

  async #wasPreempted(zone: string, name: string, id: string | undefined): Promise<boolean> {
    const operations = await this.#api.list<GcpOperation>(`zones/${zone}/operations`, {
      filter: 'operationType = "compute.instances.preempted"',
    });
    return operations.some((operation) =>
      id !== undefined
        ? operation.targetId === id
        : (operation.targetLink ?? '').endsWith(`/instances/${name}`),
    );
  }

  async #getInstance(zone: string, name: string): Promise<GcpInstance | undefined> {
    try {
      return await this.#api.get<GcpInstance>(`zones/${zone}/instances/${encodeURIComponent(name)}`);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async #operationFailure(zone: string, name: string) {
    try {
      return operationError(await this.#api.get<GcpOperation>(`zones/${zone}/operations/${name}`));
    } catch {
      return undefined;
    }
  }

  /** The operation once DONE, or as it is when `operationWaitMs` has passed. */
  async #waitForOperation(zone: string, operation: GcpOperation): Promise<GcpOperation> {
    const deadline = Date.now() + this.#operationWaitMs;
    let current = operation;
    while (current.status !== 'DONE' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, this.#pollIntervalMs));
      current = await this.#api.get<GcpOperation>(`zones/${zone}/operations/${operation.name}`);
    }
    return current;
  }

  /** The instance a previous launch of this name made, in the first zone that has it. */
  async #findLaunched(name: string, zones: readonly string[]): Promise<GcpInstance | undefined> {
    for (const zone of zones) {
      const instance = await this.#getInstance(zone, name);
      if (instance) return { ...instance, zone };
    }
    return undefined;
  }

  /** The firewall rule that opens SSH to dstack's instances; made once, a concurrent create (409) is fine. */
  #ensureFirewall(): Promise<void> {
    this.#firewall ??= this.#api
      .post('global/firewalls', {
        name: `dstack-ssh-in-global-networks-${networkName(this.config)}`.slice(0, 63).replace(/-+$/, ''),
        network: `global/networks/${networkName(this.config)}`,
        direction: 'INGRESS',
        allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
        sourceRanges: ['0.0.0.0/0'],
        targetTags: [GCP_INSTANCE_NETWORK_TAG],
        description: 'Allows SSH connections to dstack instances',
      })
      .then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof GcpApiCallError && error.statusCode === 409) return;
          this.#firewall = undefined;
          throw error;
        },
      );
    return this.#firewall;
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

  #provisioningData(
    offer: InstanceOfferWithAvailability,
    zone: string,
    name: string,
    operation: string | undefined,
  ): JobProvisioningData {
    const backendData: GcpBackendData = {
      zone,
      ...(operation ? { operation } : {}),
      market: offer.instance.resources.spot ? 'spot' : 'on-demand',
    };
    return {
      backend: GCP_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: name,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: this.config.public_ips ?? true,
      region: regionOfZone(zone),
      availability_zone: zone,
      price: offer.price,
      username: GCP_IMAGE_USER,
      ssh_port: null,
      dockerized: true,
      backend_data: JSON.stringify(backendData),
    };
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
