import {
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  type Instance,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
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
  withAvailability,
} from '@dstack/core';
import { AwsClients, awsErrorCode, typedAwsError } from './aws-clients.js';
import { AWS_BACKEND_TYPE, type AwsConfig } from './aws-config.js';
import { createGatewayInstance } from './aws-gateways.js';
import { launchAwsInstance } from './aws-launch.js';
import {
  AWS_CONFIGURABLE_DISK_SIZE,
  isSupportedInstanceType,
  marketOf,
  readVcpuQuota,
  VcpuQuotas,
  vcpuQuotaCode,
} from './aws-offers.js';
import { type AwsReservation, AwsReservationLookups, isUsable, unusableReason } from './aws-reservations.js';
import * as ebs from './aws-volumes.js';

/**
 * What this Compute implements, declared on the plugin descriptor too: fleets
 * (`createInstance`), privileged runs and instance (host path) volumes, as every shim backend.
 */
/**
 * `multinode`: instances of one VPC network reach each other on their internal IPs (dstack's too);
 * `placement-groups`: a cluster placement group per cluster fleet; `volumes`: EBS volumes; `gateways`: gateway instances (`aws-gateways.ts`);
 * `reservations`: Capacity Reservations and Capacity Blocks (`aws-reservations.ts`).
 */
export const AWS_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
  'multinode',
  'placement-groups',
  'volumes',
  'gateways',
  'reservations',
];

/** The stateReason code EC2 gives a spot instance it took back. */
export const SPOT_INTERRUPTION_REASON_CODE = 'Server.SpotInstanceTermination';

/** What the backend learns about one of its instances (`describeInstance`). */
export interface AwsInstanceStatus {
  /** EC2's state name, or `gone` when EC2 no longer lists it. */
  readonly state: string;
  /** True when EC2 took the (spot) instance back: the job ends `interrupted`. */
  readonly interrupted: boolean;
  readonly stateReason: string | undefined;
}

/** Settings of `createAwsBackend`. */
export interface AwsBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: AwsConfig;
  /** Where offers come from. Default: the process's `defaultCatalog()` (the server's: gpuhunt's published catalogs, else the bundled snapshot). */
  catalog?: CatalogQueryable;
  /** SDK attempts per call. Default the SDK's (3). */
  maxAttempts?: number;
}

/**
 * Runs jobs on EC2: `createInstance` launches an instance whose cloud-init (core's VM bootstrap)
 * starts the shim, and `runJob` is `createInstance` for the job.
 */
export class AwsCompute
  implements
    ComputeWithCreateInstance,
    ComputeWithPrivileged,
    ComputeWithInstanceVolumes,
    ComputeWithPlacementGroups,
    ComputeWithVolumes,
    ComputeWithGateways,
    ComputeWithReservations
{
  readonly type = AWS_BACKEND_TYPE;
  readonly capabilities = AWS_CAPABILITIES;
  readonly config: AwsConfig;
  readonly #clients: AwsClients;
  /** Undefined: the process's `defaultCatalog()`, looked up on each query (the server sets it at start). */
  readonly #catalog: CatalogQueryable | undefined;
  readonly #quotas: VcpuQuotas;
  readonly #zones = new Map<string, Promise<string[]>>();
  readonly #reservations: AwsReservationLookups;

  constructor(settings: AwsBackendSettings) {
    this.config = settings.config;
    this.#clients = new AwsClients({
      creds: settings.config.creds,
      endpointUrl: settings.config.endpoint_url,
      maxAttempts: settings.maxAttempts,
    });
    this.#catalog = settings.catalog;
    this.#quotas = new VcpuQuotas((region, code) => readVcpuQuota(this.#clients.serviceQuotas(region), code));
    this.#reservations = new AwsReservationLookups((region) => this.#clients.ec2(region));
  }

  /**
   * The catalog's AWS offers in the configured regions and dstack's families, with quota
   * availability and zones. With `requirements.reservation` (dstack's reservation filter), only
   * on-demand offers of the reservation's type in its region, in its zone, while it is usable.
   */
  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), AWS_BACKEND_TYPE, {
      requirements,
      locations: this.config.regions ?? null,
      configurableDiskSize: AWS_CONFIGURABLE_DISK_SIZE,
      extraFilter: (offer) => isSupportedInstanceType(offer.instance.name),
    });
    if (!requirements.reservation) return this.#withAvailability(offers);
    const reservations = await this.#call(() =>
      this.#reservations.byRegion(
        this.config.regions ?? regionsOf(offers),
        requirements.reservation as string,
      ),
    );
    const inReservation = (offer: InstanceOffer): AwsReservation | undefined => {
      const reservation = reservations.get(offer.region);
      // Spot instances cannot run in a reservation.
      if (!reservation || !isUsable(reservation) || offer.instance.resources.spot) return undefined;
      return offer.instance.name === reservation.instanceType ? reservation : undefined;
    };
    const available = await this.#withAvailability(offers.filter((offer) => inReservation(offer)));
    return available.map((offer) => ({
      ...offer,
      availability_zones: [(inReservation(offer) as AwsReservation).zone],
    }));
  }

  /**
   * The contract's reason for a reservation with no offers: no configured region has it, or
   * where it is, it is not active or has no instance free.
   */
  async reservationUnusableReason(reservation: string): Promise<string | null> {
    const regions = this.config.regions ?? regionsOf(await this.#catalogOffers());
    const found = [...(await this.#call(() => this.#reservations.byRegion(regions, reservation))).values()];
    if (found.length === 0) {
      return `no capacity reservation or capacity block ${reservation} in ${regions.join(', ')}`;
    }
    if (found.some(isUsable)) return null;
    return found.map(unusableReason).join('; ');
  }

  /** Every AWS offer the catalog has, for the regions the backend covers when its config names none. */
  #catalogOffers(): Promise<InstanceOffer[]> {
    return getCatalogOffers(this.#catalog ?? defaultCatalog(), AWS_BACKEND_TYPE, {
      extraFilter: (offer) => isSupportedInstanceType(offer.instance.name),
    });
  }

  #withAvailability(offers: readonly InstanceOffer[]): Promise<InstanceOfferWithAvailability[]> {
    return Promise.all(
      offers.map(async (offer) => {
        const quota = await this.#quotas.get(
          offer.region,
          vcpuQuotaCode(offer.instance.name, marketOf(offer)),
        );
        const zones = await this.#zonesOf(offer.region).catch(() => null);
        return withAvailability(offer, quota === 0 ? 'no_quota' : 'available', {
          availability_zones: zones,
        });
      }),
    );
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Launches the instance: the instance already launched for `config.instance_id` when there is
   * one (a retried launch), else RunInstances with `ClientToken` = `instance_id` in each zone's
   * subnet in turn. Capacity and quota errors move to the next zone, then `NoCapacityError`.
   * Refused keys, denied calls and throttling end the launch as core's typed errors.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    try {
      return await launchAwsInstance(this.#clients, this.config, offer, config, placementGroup);
    } catch (error) {
      throw typedAwsError(error);
    }
  }

  /** Terminates the instance; an instance EC2 no longer knows is terminated already. */
  async terminateInstance(instanceId: string, region: string, _backendData?: string | null): Promise<void> {
    try {
      await this.#clients.ec2(region).send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    } catch (error) {
      const code = awsErrorCode(error);
      if (code === 'InvalidInstanceID.NotFound' || code === 'InvalidInstanceID.Malformed') return;
      throw error;
    }
  }

  /**
   * Looks the instance up once: `hostname` (the public IP, or the private one without public
   * IPs) and `internal_ip` once it runs with its address. An instance that ended before running
   * fails provisioning; the NotFound window right after launch and throttling leave the data unchanged.
   */
  async updateProvisioningData(
    provisioningData: JobProvisioningData,
    _projectSshKeys?: ProjectSshKeys,
  ): Promise<JobProvisioningData> {
    const instance = await this.#describe(provisioningData.region, provisioningData.instance_id);
    if (instance === 'transient') return provisioningData;
    if (instance === undefined) {
      throw new ProvisioningError(`Instance ${provisioningData.instance_id} no longer exists`);
    }
    const state = instance.State?.Name;
    if (state === 'shutting-down' || state === 'terminated' || state === 'stopping' || state === 'stopped') {
      const reason = instance.StateReason?.Code ? ` (${instance.StateReason.Code})` : '';
      throw new ProvisioningError(`Instance ${provisioningData.instance_id} is ${state}${reason}`);
    }
    if (state !== 'running') return provisioningData;
    const hostname = provisioningData.public_ip_enabled
      ? instance.PublicIpAddress
      : instance.PrivateIpAddress;
    if (!hostname) return provisioningData;
    return { ...provisioningData, hostname, internal_ip: instance.PrivateIpAddress ?? null, ssh_port: 22 };
  }

  /** The contract's `instanceStatus`: EC2's view of an instance whose agents stopped answering. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const status = await this.describeInstance(provisioningData.instance_id, provisioningData.region);
    if (status.interrupted) return 'interrupted';
    return status.state === 'pending' || status.state === 'running' ? 'running' : 'gone';
  }

  /**
   * The instance's state as EC2 reports it, and whether EC2 took it back (a spot interruption:
   * `stateReason` `Server.SpotInstanceTermination`).
   */
  async describeInstance(instanceId: string, region: string): Promise<AwsInstanceStatus> {
    const instance = await this.#describe(region, instanceId);
    if (instance === 'transient') return { state: 'pending', interrupted: false, stateReason: undefined };
    if (instance === undefined) return { state: 'gone', interrupted: false, stateReason: undefined };
    const stateReason = instance.StateReason?.Code;
    return {
      state: instance.State?.Name ?? 'unknown',
      interrupted: stateReason === SPOT_INTERRUPTION_REASON_CODE,
      stateReason,
    };
  }

  /** A cluster placement group named as the server named it (`dstack-<project>-<fleet>-pg-…`). */
  createPlacementGroup(
    group: PlacementGroup,
    masterOffer: InstanceOffer,
  ): Promise<PlacementGroupProvisioningData> {
    return this.#call(() =>
      ebs.createPlacementGroup(this.#clients.ec2(group.configuration.region), group, masterOffer),
    );
  }

  deletePlacementGroup(group: PlacementGroup): Promise<void> {
    return this.#call(() => ebs.deletePlacementGroup(this.#clients.ec2(group.configuration.region), group));
  }

  /** dstack's rule: the group's region, and no burstable type in a cluster group. */
  isSuitablePlacementGroup(group: PlacementGroup, offer: InstanceOffer): boolean {
    return ebs.offerSupportsPlacementGroup(offer, group) && group.configuration.region === offer.region;
  }

  registerVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.#call(() => ebs.registerVolume(this.#clients.ec2(volume.configuration.region), volume));
  }

  createVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.#call(async () =>
      ebs.createVolume(
        this.#clients.ec2(volume.configuration.region),
        volume,
        await this.#zonesOf(volume.configuration.region),
        this.config.tags,
      ),
    );
  }

  deleteVolume(volume: Volume): Promise<void> {
    return this.#call(() => ebs.deleteVolume(this.#clients.ec2(volume.configuration.region), volume));
  }

  attachVolume(volume: Volume, provisioningData: JobProvisioningData): Promise<VolumeAttachmentData> {
    return this.#call(() =>
      ebs.attachVolume(this.#clients.ec2(volume.configuration.region), volume, provisioningData),
    );
  }

  detachVolume(
    volume: Volume,
    provisioningData: JobProvisioningData,
    options: { force?: boolean } = {},
  ): Promise<void> {
    return this.#call(() =>
      ebs.detachVolume(
        this.#clients.ec2(volume.configuration.region),
        volume,
        provisioningData,
        options.force ?? false,
      ),
    );
  }

  isVolumeDetached(volume: Volume, provisioningData: JobProvisioningData): Promise<boolean> {
    return this.#call(() =>
      ebs.isVolumeDetached(this.#clients.ec2(volume.configuration.region), volume, provisioningData),
    );
  }

  /** A gateway instance (`aws-gateways.ts`), running with its address when this returns. */
  createGatewayReplica(configuration: GatewayReplicaConfiguration): Promise<GatewayReplicaProvisioningData> {
    return this.#call(() =>
      createGatewayInstance(this.#clients.ec2(configuration.region), this.config, configuration),
    );
  }

  terminateGatewayReplica(
    instanceId: string,
    configuration: GatewayReplicaConfiguration,
    backendData?: string | null,
  ): Promise<void> {
    return this.terminateInstance(instanceId, configuration.region, backendData);
  }

  /** Core's typed errors for auth, denial and throttling. */
  async #call<T>(action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw typedAwsError(error);
    }
  }

  /** Closes the SDK clients' connections. */
  close(): void {
    this.#clients.destroy();
  }

  async #describe(region: string, instanceId: string): Promise<Instance | 'transient' | undefined> {
    try {
      const answer = await this.#clients
        .ec2(region)
        .send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
      return answer.Reservations?.flatMap((reservation) => reservation.Instances ?? [])[0];
    } catch (error) {
      const code = awsErrorCode(error);
      // Right after RunInstances EC2 may not know the id yet (eventual consistency).
      if (code === 'InvalidInstanceID.NotFound') return 'transient';
      if (code === 'RequestLimitExceeded' || code === 'Throttling') return 'transient';
      throw error;
    }
  }

  #zonesOf(region: string): Promise<string[]> {
    let zones = this.#zones.get(region);
    if (!zones) {
      zones = this.#clients
        .ec2(region)
        .send(new DescribeAvailabilityZonesCommand({ Filters: [{ Name: 'region-name', Values: [region] }] }))
        .then((answer) =>
          (answer.AvailabilityZones ?? [])
            .filter((zone) => zone.State === undefined || zone.State === 'available')
            .flatMap((zone) => (zone.ZoneName ? [zone.ZoneName] : []))
            .sort(),
        );
      zones.catch(() => this.#zones.delete(region));
      this.#zones.set(region, zones);
    }
    return zones;
  }
}

/** The regions of `offers`, in their order. */
function regionsOf(offers: readonly InstanceOffer[]): string[] {
  return [...new Set(offers.map((offer) => offer.region))];
}

/** The aws backend's Compute, for use without a server (tests, scripts). */
export function createAwsBackend(settings: AwsBackendSettings): AwsCompute {
  return new AwsCompute(settings);
}
