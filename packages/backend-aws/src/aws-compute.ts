import {
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  type EC2Client,
  type Instance,
  RunInstancesCommand,
  type RunInstancesCommandInput,
  type Tenancy,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { defaultCatalog } from '@dstack/catalog';
import {
  BackendError,
  buildVmUserData,
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
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOffer,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  mergeTags,
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
  withAvailability,
} from '@dstack/core';
import { AWS_THROTTLING_ERROR_CODES, AwsClients, awsErrorCode, typedAwsError } from './aws-clients.js';
import { AWS_BACKEND_TYPE, type AwsConfig } from './aws-config.js';
import { createGatewayInstance } from './aws-gateways.js';
import { findImageId, imageChoiceFor } from './aws-images.js';
import { findLaunchedInstance } from './aws-launched-instance.js';
import { ensureSecurityGroup, findVpcId, subnetsByZone } from './aws-network.js';
import {
  AWS_CONFIGURABLE_DISK_SIZE,
  isSupportedInstanceType,
  marketOf,
  readVcpuQuota,
  VcpuQuotas,
  vcpuQuotaCode,
} from './aws-offers.js';
import {
  type AwsReservation,
  AwsReservationLookups,
  describeReservation,
  isUsable,
  unusableReason,
} from './aws-reservations.js';
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

/**
 * RunInstances errors after which the next zone may succeed (capacity, quota, a type the zone
 * lacks, spot limits). Any other error is the request's fault: it is thrown at once, no retry.
 */
export const AWS_NEXT_ZONE_ERROR_CODES: ReadonlySet<string> = new Set([
  'InsufficientInstanceCapacity',
  'InstanceLimitExceeded',
  'VcpuLimitExceeded',
  'Unsupported',
  'SpotMaxPriceTooLow',
  'MaxSpotInstanceCountExceeded',
  'InsufficientCapacityOnHost',
  'InsufficientHostCapacity',
  'InsufficientReservedInstanceCapacity',
  // The reservation filled up (or changed) between the look-up and the launch.
  'ReservationCapacityExceeded',
]);

/** The stateReason code EC2 gives a spot instance it took back. */
export const SPOT_INTERRUPTION_REASON_CODE = 'Server.SpotInstanceTermination';

/** What `backend_data` of the provisioning data holds. */
export interface AwsBackendData {
  readonly zone: string;
  readonly market: 'on-demand' | 'spot';
}

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

/** Codes after which the same RunInstances (same ClientToken) is repeated: throttling, EC2's own failures. */
const RETRIED_LAUNCH_ERROR_CODES: ReadonlySet<string> = new Set([
  ...AWS_THROTTLING_ERROR_CODES,
  'InternalError',
  'ServiceUnavailable',
  'Unavailable',
]);
const LAUNCH_ATTEMPTS = 4;

/** RunInstances, repeated (bounded, with a short backoff) on throttling and EC2's internal errors only. */
async function runInstances(ec2: EC2Client, input: RunInstancesCommandInput) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ec2.send(new RunInstancesCommand(input));
    } catch (error) {
      const code = awsErrorCode(error);
      if (attempt >= LAUNCH_ATTEMPTS || code === undefined || !RETRIED_LAUNCH_ERROR_CODES.has(code))
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** (attempt - 1)));
    }
  }
}

function parseBackendData(data: string | null | undefined): Partial<AwsBackendData> {
  try {
    return (JSON.parse(data ?? '{}') as Partial<AwsBackendData>) ?? {};
  } catch {
    return {};
  }
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
      return await this.#createInstance(offer, config, placementGroup);
    } catch (error) {
      throw typedAwsError(error);
    }
  }

  async #createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    const region = offer.region;
    const ec2 = this.#clients.ec2(region);
    const image = imageChoiceFor(this.config, offer.instance.resources.gpus.length > 0);
    const launched = await findLaunchedInstance(ec2, config.instance_id);
    if (launched) return this.#provisioningData(offer, launched, image.user);

    const reservation = config.reservation ? await this.#usableReservation(region, config.reservation) : null;
    const publicIps = this.config.public_ips ?? true;
    const vpcId = await findVpcId(ec2, this.config, region);
    const subnets = await subnetsByZone(ec2, vpcId, publicIps);
    // A reservation holds capacity in its own zone only.
    const zones = (offer.availability_zones ?? [...subnets.keys()].sort()).filter(
      (zone) => subnets.has(zone) && (reservation === null || zone === reservation.zone),
    );
    if (zones.length === 0) {
      const where = reservation ? `the zone of ${reservation.id} (${reservation.zone})` : "the offer's zones";
      throw new NoCapacityError(`No usable subnet of ${vpcId} in ${where} (${region})`);
    }
    const [imageId, groupId] = await Promise.all([
      findImageId(ec2, image, region),
      ensureSecurityGroup(ec2, config.project_name, vpcId),
    ]);
    // The same name for the same instance_id: a retried RunInstances must repeat its parameters.
    const name = generateUniqueBackendName(config.project_name, config.instance_name, {
      seed: config.instance_id,
    });
    const tags = mergeTags(
      {
        Name: name,
        owner: 'dstack',
        dstack_project: config.project_name,
        dstack_name: config.instance_name,
        dstack_user: config.user,
      },
      this.config.tags,
      config.tags,
    );
    const spot = offer.instance.resources.spot;
    const userData = Buffer.from(buildVmUserData(config), 'utf8').toString('base64');
    const failures: string[] = [];
    for (const zone of zones) {
      const input: RunInstancesCommandInput = {
        ImageId: imageId,
        InstanceType: offer.instance.name as RunInstancesCommandInput['InstanceType'],
        MinCount: 1,
        MaxCount: 1,
        ClientToken: config.instance_id,
        UserData: userData,
        BlockDeviceMappings: [
          {
            DeviceName: '/dev/sda1',
            Ebs: {
              VolumeSize: Math.round(offer.instance.resources.disk.size_mib / 1024),
              VolumeType: 'gp2',
              DeleteOnTermination: true,
            },
          },
        ],
        TagSpecifications: [
          { ResourceType: 'instance', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
        ],
        NetworkInterfaces: [
          {
            DeviceIndex: 0,
            SubnetId: subnets.get(zone),
            AssociatePublicIpAddress: publicIps,
            Groups: [groupId],
          },
        ],
        ...(this.config.iam_instance_profile
          ? { IamInstanceProfile: { Name: this.config.iam_instance_profile } }
          : {}),
        ...placementOf(placementGroup, reservation),
        ...(spot
          ? {
              InstanceMarketOptions: {
                MarketType: 'spot',
                SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' },
              },
            }
          : {}),
        ...(reservation
          ? {
              CapacityReservationSpecification: {
                CapacityReservationTarget: { CapacityReservationId: reservation.id },
              },
              // A Capacity Block is launched with its own market type (dstack's `is_capacity_block`).
              ...(reservation.capacityBlock
                ? { InstanceMarketOptions: { MarketType: 'capacity-block' } }
                : {}),
            }
          : {}),
      };
      try {
        const answer = await runInstances(this.#clients.ec2WithoutRetries(region), input);
        const instance = answer.Instances?.[0];
        if (!instance?.InstanceId) throw new BackendError(`RunInstances in ${zone} returned no instance`);
        return this.#provisioningData(offer, instance, image.user);
      } catch (error) {
        const code = awsErrorCode(error);
        // A retried launch that first succeeded in a later zone: its ClientToken matches there.
        if (code === 'IdempotentParameterMismatch') {
          failures.push(`${zone}: ${code}`);
          continue;
        }
        if (code === undefined || !AWS_NEXT_ZONE_ERROR_CODES.has(code)) throw error;
        failures.push(`${zone}: ${code}`);
      }
    }
    throw new NoCapacityError(
      `No capacity for ${offer.instance.name}${spot ? ' (spot)' : ''} in ${region}: ${failures.join(', ')}`,
    );
  }

  /**
   * The reservation to launch into, looked up afresh (the offers' look-up may be minutes old); one
   * that is gone, not active or full ends the launch as no capacity, as it does in dstack.
   */
  async #usableReservation(region: string, id: string): Promise<AwsReservation> {
    const reservation = await describeReservation(this.#clients.ec2(region), region, id);
    if (!reservation)
      throw new NoCapacityError(`No capacity reservation or capacity block ${id} in ${region}`);
    if (!isUsable(reservation)) throw new NoCapacityError(unusableReason(reservation));
    return reservation;
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

  #provisioningData(
    offer: InstanceOfferWithAvailability,
    instance: Instance,
    username: string,
  ): JobProvisioningData {
    const zone = instance.Placement?.AvailabilityZone ?? '';
    const backendData: AwsBackendData = {
      zone,
      market: offer.instance.resources.spot ? 'spot' : 'on-demand',
    };
    return {
      backend: AWS_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instance.InstanceId as string,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: this.config.public_ips ?? true,
      region: offer.region,
      availability_zone: zone || null,
      reservation: instance.CapacityReservationId ?? null,
      price: offer.price,
      username,
      ssh_port: null,
      dockerized: true,
      backend_data: JSON.stringify(backendData),
    };
  }
}

/**
 * `Placement` of a launch: the cluster placement group, and the tenancy of a reservation made
 * with other than the default one (it only takes instances of its own tenancy, as dstack knows).
 */
function placementOf(
  placementGroup: PlacementGroup | null,
  reservation: AwsReservation | null,
): Pick<RunInstancesCommandInput, 'Placement'> {
  const tenancy = reservation && reservation.tenancy !== 'default' ? reservation.tenancy : undefined;
  if (!placementGroup && !tenancy) return {};
  return {
    Placement: {
      ...(placementGroup ? { GroupName: placementGroup.name } : {}),
      ...(tenancy ? { Tenancy: tenancy as Tenancy } : {}),
    },
  };
}

/** The regions of `offers`, in their order. */
function regionsOf(offers: readonly InstanceOffer[]): string[] {
  return [...new Set(offers.map((offer) => offer.region))];
}

/** The aws backend's Compute, for use without a server (tests, scripts). */
export function createAwsBackend(settings: AwsBackendSettings): AwsCompute {
  return new AwsCompute(settings);
}

export { parseBackendData as parseAwsBackendData };
