/**
 * Launching a Compute Engine instance for the backend's `createInstance`: the instance an earlier
 * launch of the same name made, else `instances.insert` zone by zone (only zones of the
 * reservation with room, when one is named), waiting on each insert's operation, with dstack's
 * SSH firewall rule made once; and the provisioning data a launch yields.
 */
import {
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  NoCapacityError,
  type PlacementGroup,
  ProvisioningError,
} from '@dstack/core';
import type { GcpComputeApi } from './gcp-api.js';
import { GCP_BACKEND_TYPE, type GcpConfig } from './gcp-config.js';
import {
  GCP_IMAGE_USER,
  GCP_INSTANCE_NETWORK_TAG,
  insertRequestId,
  instanceBody,
  instanceNameFor,
  networkName,
} from './gcp-instance-body.js';
import { regionOfZone } from './gcp-offers.js';
import type { GcpOperationResource } from './gcp-operations.js';
import { resourcePolicyReference } from './gcp-placement-groups.js';
import {
  type GcpReservationLookups,
  type GcpReservationReference,
  type GcpZoneReservation,
  reservationAffinity,
  reservationHasCapacity,
  reservationReference,
} from './gcp-reservations.js';
import { GcpApiCallError, isNotFound } from './gcp-rest.js';

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

/** The fields of a Compute instance the backend reads. */
export interface GcpInstance {
  id: string;
  name: string;
  status: string;
  zone: string;
  networkInterfaces?: { networkIP?: string; accessConfigs?: { natIP?: string }[] }[];
}

/** `backend_data` parsed; fields missing when it is absent or not ours. */
export function parseGcpBackendData(data: string | null | undefined): Partial<GcpBackendData> {
  try {
    return (JSON.parse(data ?? '{}') as Partial<GcpBackendData>) ?? {};
  } catch {
    return {};
  }
}

/** The first error code of a DONE operation, with its message. */
export function operationError(
  operation: GcpOperationResource,
): { code: string; message: string } | undefined {
  const first = operation.error?.errors?.[0];
  if (!operation.error) return undefined;
  return { code: first?.code ?? 'UNKNOWN', message: first?.message ?? 'the operation failed' };
}

/** The instance of that name in `zone`, undefined when Compute does not know it (404). */
export async function getGcpInstance(
  api: GcpComputeApi,
  zone: string,
  name: string,
): Promise<GcpInstance | undefined> {
  try {
    return await api.get<GcpInstance>(`zones/${zone}/instances/${encodeURIComponent(name)}`);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** What a launcher works with: the backend's client, config and reservation look-ups. */
export interface GcpLauncherSettings {
  readonly api: GcpComputeApi;
  readonly config: GcpConfig;
  readonly reservations: GcpReservationLookups;
  zonesOf(region: string): Promise<string[]>;
  /** How long a launch waits on its insert operation in a zone before returning. */
  readonly operationWaitMs: number;
  /** Pause between reads of a pending operation. */
  readonly pollIntervalMs: number;
}

/** Launches the backend's instances; one per Compute, as it remembers the firewall rule it made. */
export class GcpInstanceLauncher {
  readonly #api: GcpComputeApi;
  readonly #config: GcpConfig;
  readonly #reservations: GcpReservationLookups;
  readonly #zonesOf: (region: string) => Promise<string[]>;
  readonly #operationWaitMs: number;
  readonly #pollIntervalMs: number;
  #firewall: Promise<void> | undefined;

  constructor(settings: GcpLauncherSettings) {
    this.#api = settings.api;
    this.#config = settings.config;
    this.#reservations = settings.reservations;
    this.#zonesOf = (region) => settings.zonesOf(region);
    this.#operationWaitMs = settings.operationWaitMs;
    this.#pollIntervalMs = settings.pollIntervalMs;
  }

  /**
   * The instance a previous launch with this `instance_id` made (it has the same name), else
   * `instances.insert` in each of the offer's zones in turn, waiting on the operation; capacity,
   * quota and missing types move to the next zone, then `NoCapacityError`.
   */
  async launch(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    const name = instanceNameFor(config);
    const resourcePolicy = placementGroup
      ? resourcePolicyReference(
          this.#config.project_id,
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
        ...instanceBody({ gcpConfig: this.#config, offer, config, name, zone, resourcePolicy }),
        ...(reservation ? { reservationAffinity: reservationAffinity(reservation.reference) } : {}),
      };
      let operation: GcpOperationResource;
      try {
        operation = await this.#api.post<GcpOperationResource>(`zones/${zone}/instances`, body, {
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
    const reference = reservationReference(reservation, this.#config.project_id);
    if (!reference) throw new NoCapacityError(`${JSON.stringify(reservation)} names no GCP reservation`);
    return { reference, byZone: await this.#reservations.find(reference, true) };
  }

  /** The operation once DONE, or as it is when `operationWaitMs` has passed. */
  async #waitForOperation(zone: string, operation: GcpOperationResource): Promise<GcpOperationResource> {
    const deadline = Date.now() + this.#operationWaitMs;
    let current = operation;
    while (current.status !== 'DONE' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, this.#pollIntervalMs));
      current = await this.#api.get<GcpOperationResource>(`zones/${zone}/operations/${operation.name}`);
    }
    return current;
  }

  /** The instance a previous launch of this name made, in the first zone that has it. */
  async #findLaunched(name: string, zones: readonly string[]): Promise<GcpInstance | undefined> {
    for (const zone of zones) {
      const instance = await getGcpInstance(this.#api, zone, name);
      if (instance) return { ...instance, zone };
    }
    return undefined;
  }

  /** The firewall rule that opens SSH to dstack's instances; made once, a concurrent create (409) is fine. */
  #ensureFirewall(): Promise<void> {
    this.#firewall ??= this.#api
      .post('global/firewalls', {
        name: `dstack-ssh-in-global-networks-${networkName(this.#config)}`.slice(0, 63).replace(/-+$/, ''),
        network: `global/networks/${networkName(this.#config)}`,
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

  /** The provisioning data of a launched instance: no address yet (`updateProvisioningData` adds it). */
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
      public_ip_enabled: this.#config.public_ips ?? true,
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
