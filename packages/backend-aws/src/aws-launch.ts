/**
 * Launching an EC2 instance for the backend's `createInstance`: the zones to try (a reservation's
 * own, else the offer's with a subnet), RunInstances with the instance's cloud-init, retried on
 * throttling and moving to the next zone on capacity errors, and the provisioning data it yields.
 */
import {
  type EC2Client,
  type Instance,
  RunInstancesCommand,
  type RunInstancesCommandInput,
  type Tenancy,
} from '@aws-sdk/client-ec2';
import {
  BackendError,
  buildVmUserData,
  generateUniqueBackendName,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  mergeTags,
  NoCapacityError,
  type PlacementGroup,
} from '@dstack/core';
import { AWS_THROTTLING_ERROR_CODES, type AwsClients, awsErrorCode } from './aws-clients.js';
import { AWS_BACKEND_TYPE, type AwsConfig } from './aws-config.js';
import { findImageId, imageChoiceFor } from './aws-images.js';
import { findLaunchedInstance } from './aws-launched-instance.js';
import { ensureSecurityGroup, findVpcId, subnetsByZone } from './aws-network.js';
import { type AwsReservation, describeReservation, isUsable, unusableReason } from './aws-reservations.js';

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

/** What `backend_data` of the provisioning data holds. */
export interface AwsBackendData {
  readonly zone: string;
  readonly market: 'on-demand' | 'spot';
}

/**
 * Codes after which the same RunInstances (same ClientToken, so at most one instance) is repeated:
 * throttling, EC2's own failures, and a connection lost before the answer (a kept-alive connection
 * the endpoint closed as it was reused: Node's `socket hang up`).
 */
const RETRIED_LAUNCH_ERROR_CODES: ReadonlySet<string> = new Set([
  ...AWS_THROTTLING_ERROR_CODES,
  'InternalError',
  'ServiceUnavailable',
  'Unavailable',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);
const LAUNCH_ATTEMPTS = 4;

/** RunInstances, repeated (bounded, with a short backoff) on throttling, EC2's internal errors and lost connections only. */
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

/**
 * Launches the instance: the instance already launched for `config.instance_id` when there is
 * one (a retried launch), else RunInstances with `ClientToken` = `instance_id` in each zone's
 * subnet in turn. Capacity and quota errors move to the next zone, then `NoCapacityError`.
 */
export async function launchAwsInstance(
  clients: AwsClients,
  backendConfig: AwsConfig,
  offer: InstanceOfferWithAvailability,
  config: InstanceConfiguration,
  placementGroup: PlacementGroup | null,
): Promise<JobProvisioningData> {
  const region = offer.region;
  const ec2 = clients.ec2(region);
  const image = imageChoiceFor(backendConfig, offer.instance.resources.gpus.length > 0);
  const launched = await findLaunchedInstance(ec2, config.instance_id);
  if (launched) return awsProvisioningData(backendConfig, offer, launched, image.user);

  const reservation = config.reservation ? await usableReservation(ec2, region, config.reservation) : null;
  const publicIps = backendConfig.public_ips ?? true;
  const vpcId = await findVpcId(ec2, backendConfig, region);
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
    backendConfig.tags,
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
      ...(backendConfig.iam_instance_profile
        ? { IamInstanceProfile: { Name: backendConfig.iam_instance_profile } }
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
            ...(reservation.capacityBlock ? { InstanceMarketOptions: { MarketType: 'capacity-block' } } : {}),
          }
        : {}),
    };
    try {
      const answer = await runInstances(clients.ec2WithoutRetries(region), input);
      const instance = answer.Instances?.[0];
      if (!instance?.InstanceId) throw new BackendError(`RunInstances in ${zone} returned no instance`);
      return awsProvisioningData(backendConfig, offer, instance, image.user);
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
async function usableReservation(ec2: EC2Client, region: string, id: string): Promise<AwsReservation> {
  const reservation = await describeReservation(ec2, region, id);
  if (!reservation) throw new NoCapacityError(`No capacity reservation or capacity block ${id} in ${region}`);
  if (!isUsable(reservation)) throw new NoCapacityError(unusableReason(reservation));
  return reservation;
}

/** The provisioning data of a launched `instance`: no address yet (`updateProvisioningData` adds it). */
export function awsProvisioningData(
  backendConfig: AwsConfig,
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
    public_ip_enabled: backendConfig.public_ips ?? true,
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
