/**
 * RunInstances as EC2 answers it: parameters checked the way EC2 checks them, the zone from the
 * subnet (or Placement, or the targeted Capacity Reservation), capacity and quota faults, spot
 * prices, launches into Capacity Reservations and Capacity Blocks, and ClientToken idempotency
 * (the same token answers the same reservation, which the SDK relies on when it retries a 5xx).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Ec2Account } from './aws-ec2-account.js';
import { capacityReservationRequestOf } from './aws-ec2-capacity-reservations.js';
import type { BlockDevice, Ec2Instance } from './aws-ec2-instances.js';
import type { Subnet } from './aws-ec2-network.js';
import type { Ec2PlacementGroup } from './aws-ec2-volumes.js';
import {
  booleanParam,
  integerParam,
  listParams,
  listValues,
  type QueryParams,
  requiredParam,
  subParams,
  tagsOf,
} from './aws-query-params.js';
import { type AwsMarket, vcpuQuotaFor } from './aws-vcpu-quotas.js';
import { Ec2ApiError } from './ec2-api-error.js';

export interface RunInstancesResult {
  readonly reservationId: string;
  readonly instances: readonly Ec2Instance[];
}

/** A fresh EC2-style id: `i-` and 17 hex digits. */
export function newEc2Id(prefix: string): string {
  return `${prefix}-${randomBytes(9).toString('hex').slice(0, 17)}`;
}

export function runInstances(account: Ec2Account, region: string, params: QueryParams): RunInstancesResult {
  const clientToken = params.ClientToken;
  const fingerprint = fingerprintOf(params);
  if (clientToken) {
    const known = account.clientTokens.get(`${region} ${clientToken}`);
    if (known) {
      if (known.fingerprint !== fingerprint) {
        throw new Ec2ApiError(
          400,
          'IdempotentParameterMismatch',
          `Client token ${clientToken} was used with different parameters`,
        );
      }
      const instances = known.instanceIds
        .map((id) => account.instances.all().find((each) => each.id === id))
        .filter((each): each is Ec2Instance => each !== undefined);
      return { reservationId: known.reservationId, instances };
    }
  }

  const imageId = requiredParam(params, 'ImageId');
  const instanceType = params.InstanceType ?? 'm1.small';
  const minCount = integerParam(params, 'MinCount', { min: 1, max: 1000 }, Number.NaN);
  const maxCount = integerParam(params, 'MaxCount', { min: 1, max: 1000 }, Number.NaN);
  if (Number.isNaN(minCount)) requiredParam(params, 'MinCount');
  if (Number.isNaN(maxCount)) requiredParam(params, 'MaxCount');
  if (minCount > maxCount) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', 'MinCount must be less than or equal to MaxCount');
  }
  const spec = account.data.instanceTypes.get(instanceType);
  if (!spec) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', `Invalid value '${instanceType}' for InstanceType.`);
  }
  const image = account.images.find((candidate) => candidate.id === imageId && candidate.region === region);
  if (!image) {
    throw new Ec2ApiError(400, 'InvalidAMIID.NotFound', `The image id '[${imageId}]' does not exist`);
  }
  const keyName = params.KeyName || undefined;
  if (keyName && !account.keyPairs.some((pair) => pair.region === region && pair.name === keyName)) {
    throw new Ec2ApiError(400, 'InvalidKeyPair.NotFound', `The key pair '${keyName}' does not exist`);
  }

  const reservationRequest = capacityReservationRequestOf(params);
  // A targeted reservation that does not exist is refused before anything else about the launch.
  const targetedZone =
    reservationRequest.targetId === undefined
      ? undefined
      : account.capacityReservations.targetOf(region, reservationRequest.targetId).zone;
  const primaryInterface = listParams(params, 'NetworkInterface').find(
    (item) => (item.DeviceIndex ?? '0') === '0',
  );
  const subnet = subnetOf(account, region, params, primaryInterface, targetedZone);
  const securityGroupIds = securityGroupsOf(account, region, params, primaryInterface, subnet);
  const market = marketOf(params);
  const tenancy = tenancyOf(params);
  const placementGroup = placementGroupOf(account, region, params, instanceType, subnet.zone);
  const target = {
    instanceType,
    zone: subnet.zone,
    market,
    clientToken: clientToken || undefined,
    placementGroup: placementGroup?.name,
  };

  const offering = account.data.offering(instanceType, subnet.zone);
  const zonesWithType = account.data
    .zonesOf(region)
    .filter((zone) => account.data.offering(instanceType, zone.name))
    .map((zone) => zone.name);
  if (!offering || account.faults.fire('Unsupported', target)) {
    throw new Ec2ApiError(
      400,
      'Unsupported',
      `Your requested instance type (${instanceType}) is not supported in your requested Availability Zone (${subnet.zone}). Please retry your request by not specifying an Availability Zone or choosing ${zonesWithType.filter((zone) => zone !== subnet.zone).join(', ') || 'another region'}.`,
    );
  }
  const inReservation = account.capacityReservations.launchTargetOf(reservationRequest, {
    region,
    instanceType,
    zone: subnet.zone,
    tenancy,
    spot: market === 'spot',
    minCount,
  });
  if (market === 'spot') checkSpotPrice(params, instanceType, offering.spotPrice);
  // Reserved capacity is there whatever the zone has left, and the quota counted it when it was reserved.
  if (!inReservation) {
    if (placementGroup && account.faults.has('InsufficientInstanceCapacity', target)?.placementGroup) {
      account.faults.fire('InsufficientInstanceCapacity', target);
      throw new Ec2ApiError(
        500,
        'InsufficientInstanceCapacity',
        `We currently do not have sufficient ${instanceType} capacity in the placement group ${placementGroup.name} (${subnet.zone}). Our system will be working on provisioning additional capacity.`,
      );
    }
    if (
      account.faults.fire('InsufficientInstanceCapacity', target) ||
      (market === 'spot' && !offering.spotPrice)
    ) {
      throw new Ec2ApiError(
        500,
        'InsufficientInstanceCapacity',
        `We currently do not have sufficient ${instanceType} capacity in the Availability Zone you requested (${subnet.zone}). Our system will be working on provisioning additional capacity. You can currently get ${instanceType} capacity by not specifying an Availability Zone in your request or choosing ${zonesWithType.filter((zone) => zone !== subnet.zone).join(', ') || 'another region'}.`,
      );
    }
  }
  const count = inReservation
    ? Math.min(maxCount, account.capacityReservations.available(inReservation.reservation))
    : launchableCount(account, region, instanceType, market, spec.vcpus, minCount, maxCount);

  const slowIp = account.faults.fire('SlowPublicIp', target);
  const interruption = market === 'spot' ? account.faults.fire('SpotInterruption', target) : undefined;
  const publicIpWanted =
    booleanParam(primaryInterface ?? {}, 'AssociatePublicIpAddress') ?? subnet.mapPublicIpOnLaunch;
  const reservationId = newEc2Id('r');
  const tags = instanceTagsOf(params);
  const userData = decodeUserData(params.UserData);
  const blockDevices = blockDevicesOf(params);
  const instances: Ec2Instance[] = [];
  for (let launchIndex = 0; launchIndex < count; launchIndex += 1) {
    const addressSequence = account.nextAddressNumber();
    instances.push(
      account.instances.launch({
        id: newEc2Id('i'),
        reservationId,
        region,
        zone: subnet.zone,
        subnet,
        type: instanceType,
        market,
        imageId,
        hostKind: image.hostKind,
        keyName,
        securityGroupIds,
        tags: new Map(tags),
        userData,
        blockDevices: blockDevices.map((device) => ({ ...device, volumeId: newEc2Id('vol') })),
        launchIndex,
        clientToken: clientToken || undefined,
        spotInstanceRequestId: market === 'spot' ? newEc2Id('sir').slice(0, 12) : undefined,
        iamInstanceProfile: params['IamInstanceProfile.Name'] ?? params['IamInstanceProfile.Arn'],
        placementGroup: placementGroup?.name,
        tenancy,
        capacityReservationId: inReservation?.reservation.id,
        capacityReservationTargeted: inReservation?.targeted ?? false,
        capacityReservationPreference: reservationRequest.preference,
        capacityBlock: inReservation?.reservation.reservationType === 'capacity-block',
        publicIpWanted,
        madeUpPrivateIp: `172.31.${subnet.octet + ((addressSequence >> 8) & 15)}.${addressSequence & 255}`,
        madeUpPublicIp: `203.0.113.${(addressSequence % 254) + 1}`,
        publicIpDelayMs: slowIp ? (slowIp.delayMs ?? 5000) : 0,
        interruptAfterRunningMs: interruption ? (interruption.afterRunningMs ?? 5000) : undefined,
      }),
    );
  }
  if (clientToken) {
    account.clientTokens.set(`${region} ${clientToken}`, {
      reservationId,
      instanceIds: instances.map((each) => each.id),
      fingerprint,
    });
  }
  return { reservationId, instances };
}

/** The parameters other than the token itself, in a stable order. */
function fingerprintOf(params: QueryParams): string {
  const entries = Object.entries(params)
    .filter(([key]) => key !== 'ClientToken')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(entries)).digest('hex');
}

/** `reservedZone`: the targeted reservation's zone, where EC2 launches when the request names none. */
function subnetOf(
  account: Ec2Account,
  region: string,
  params: QueryParams,
  primaryInterface: Record<string, string> | undefined,
  reservedZone: string | undefined,
): Subnet {
  const subnetId = primaryInterface?.SubnetId ?? params.SubnetId;
  const zoneName = params['Placement.AvailabilityZone'];
  if (subnetId) {
    const subnet = account.network.subnet(region, subnetId);
    if (zoneName && zoneName !== subnet.zone) {
      throw new Ec2ApiError(
        400,
        'InvalidParameterValue',
        `Value (${zoneName}) for parameter availabilityZone is invalid. Subnet '${subnetId}' is in the availability zone ${subnet.zone}`,
      );
    }
    return subnet;
  }
  const wantedZone = zoneName || reservedZone;
  if (wantedZone) {
    const zone = account.data.zone(wantedZone);
    if (!zone || zone.region !== region) {
      throw new Ec2ApiError(400, 'InvalidParameterValue', `Invalid availability zone: [${wantedZone}]`);
    }
    return account.network.defaultSubnet(region, wantedZone);
  }
  // Without a subnet or zone EC2 picks one: the first zone that offers the type.
  const instanceType = params.InstanceType ?? '';
  const zone =
    account.data.zonesOf(region).find((each) => account.data.offering(instanceType, each.name)) ??
    account.data.zonesOf(region)[0];
  if (!zone) throw new Ec2ApiError(400, 'Unsupported', `No availability zone in ${region}`);
  return account.network.defaultSubnet(region, zone.name);
}

/** Instance families a cluster placement group cannot hold (burstable ones, as dstack knows too). */
const NOT_IN_CLUSTER_GROUPS = /^(t2|t3|t3a|t4g)\./;

/**
 * `Placement.GroupName`: the group must exist in the region; a cluster group takes no burstable
 * type and keeps every live instance in one zone (that of the instances already in it).
 */
function placementGroupOf(
  account: Ec2Account,
  region: string,
  params: QueryParams,
  instanceType: string,
  zone: string,
): Ec2PlacementGroup | undefined {
  const name = params['Placement.GroupName'];
  if (!name) return undefined;
  const group = account.volumes.placementGroups.find((each) => each.region === region && each.name === name);
  if (!group) {
    throw new Ec2ApiError(400, 'InvalidPlacementGroup.Unknown', `The Placement Group '${name}' is unknown.`);
  }
  if (group.strategy !== 'cluster') return group;
  if (NOT_IN_CLUSTER_GROUPS.test(instanceType)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterCombination',
      `Cluster placement groups cannot hold instances of type '${instanceType}'.`,
    );
  }
  const otherZone = account.instances.all().find((instance) => {
    if (instance.region !== region || instance.placementGroup !== name || instance.zone === zone)
      return false;
    const state = account.instances.state(instance);
    return state === 'pending' || state === 'running';
  })?.zone;
  if (otherZone !== undefined) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterCombination',
      `The cluster placement group '${name}' has instances in ${otherZone}: an instance in ${zone} cannot join it.`,
    );
  }
  return group;
}

function securityGroupsOf(
  account: Ec2Account,
  region: string,
  params: QueryParams,
  primaryInterface: Record<string, string> | undefined,
  subnet: Subnet,
): string[] {
  const ids = [
    ...listValues(params, 'SecurityGroupId'),
    ...(primaryInterface ? listValues(primaryInterface, 'SecurityGroupId') : []),
  ];
  const names = listValues(params, 'SecurityGroup');
  for (const id of ids) {
    const group = account.network.securityGroup(region, id);
    if (group.vpcId !== subnet.vpcId) {
      throw new Ec2ApiError(
        400,
        'InvalidParameter',
        `Security group ${id} and subnet ${subnet.id} belong to different networks.`,
      );
    }
  }
  for (const name of names) ids.push(account.network.securityGroupByName(region, name, subnet.vpcId).id);
  if (ids.length === 0) ids.push(account.network.securityGroupByName(region, 'default', subnet.vpcId).id);
  return [...new Set(ids)];
}

/** The market the instance is billed (and its quota counted) in: a Capacity Block's instances are on-demand ones. */
function marketOf(params: QueryParams): AwsMarket {
  const marketType = params['InstanceMarketOptions.MarketType'];
  if (marketType === undefined || marketType === 'capacity-block') return 'on-demand';
  if (marketType === 'spot') return 'spot';
  throw new Ec2ApiError(
    400,
    'InvalidParameterValue',
    `Value (${marketType}) for parameter InstanceMarketOptions.MarketType is invalid. The emulator supports spot and capacity-block.`,
  );
}

const TENANCIES = ['default', 'dedicated', 'host'];

/** `Placement.Tenancy` (EC2's default: `default`); a reservation only takes instances of its own tenancy. */
function tenancyOf(params: QueryParams): string {
  const tenancy = params['Placement.Tenancy'] || 'default';
  if (!TENANCIES.includes(tenancy)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${tenancy}) for parameter tenancy is invalid. Valid values: ${TENANCIES.join(', ')}`,
    );
  }
  return tenancy;
}

function checkSpotPrice(params: QueryParams, instanceType: string, spotPrice: number | undefined): void {
  const maxPrice = params['InstanceMarketOptions.SpotOptions.MaxPrice'];
  if (maxPrice === undefined || spotPrice === undefined) return;
  if (Number(maxPrice) < spotPrice) {
    throw new Ec2ApiError(
      400,
      'SpotMaxPriceTooLow',
      `Your Spot request price of ${maxPrice} is lower than the minimum required Spot request fulfillment price of ${spotPrice.toFixed(6)} for ${instanceType}.`,
    );
  }
}

/** As many instances as the vCPU quota allows between MinCount and MaxCount, or the quota error. */
function launchableCount(
  account: Ec2Account,
  region: string,
  instanceType: string,
  market: AwsMarket,
  vcpus: number,
  minCount: number,
  maxCount: number,
): number {
  const quota = vcpuQuotaFor(instanceType, market);
  const free = account.quotaValue(quota) - account.quotaUsage(region, quota);
  const fitting = Math.min(maxCount, Math.floor(free / vcpus));
  if (fitting >= minCount) return fitting;
  if (market === 'spot') {
    throw new Ec2ApiError(400, 'MaxSpotInstanceCountExceeded', 'Max spot instance count exceeded');
  }
  throw new Ec2ApiError(
    400,
    'VcpuLimitExceeded',
    `You have requested more vCPU capacity than your current vCPU limit of ${account.quotaValue(quota)} allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.`,
  );
}

function instanceTagsOf(params: QueryParams): Map<string, string> {
  const tags = new Map<string, string>();
  for (const [index, specification] of listParams(params, 'TagSpecification').entries()) {
    const resourceType = specification.ResourceType;
    if (!resourceType) {
      throw new Ec2ApiError(
        400,
        'InvalidParameterValue',
        `TagSpecification.${index + 1}.ResourceType is required`,
      );
    }
    if (resourceType !== 'instance') continue;
    for (const [key, value] of tagsOf(specification, 'Tag')) tags.set(key, value);
  }
  return tags;
}

/** UserData arrives base64-encoded (the SDK does not encode it: the caller must). */
function decodeUserData(encoded: string | undefined): string {
  if (encoded === undefined || encoded === '') return '';
  const normalized = encoded.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normalized) || normalized.length % 4 !== 0) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', 'Invalid BASE64 encoding of user data.');
  }
  return Buffer.from(normalized, 'base64').toString('utf8');
}

function blockDevicesOf(params: QueryParams): Omit<BlockDevice, 'volumeId'>[] {
  const devices = listParams(params, 'BlockDeviceMapping').map((item, index) => {
    const deviceName = item.DeviceName;
    if (!deviceName) {
      throw new Ec2ApiError(
        400,
        'InvalidParameterValue',
        `BlockDeviceMapping.${index + 1}.DeviceName is required`,
      );
    }
    const ebs = subParams(item, 'Ebs');
    const size = ebs.VolumeSize === undefined ? 8 : Number(ebs.VolumeSize);
    if (!Number.isInteger(size) || size < 1 || size > 16384) {
      throw new Ec2ApiError(
        400,
        'InvalidParameterValue',
        `Volume of size ${ebs.VolumeSize}GB is not valid for BlockDeviceMapping.${index + 1}.Ebs.VolumeSize: must be 1-16384`,
      );
    }
    return { deviceName, sizeGiB: size, volumeType: ebs.VolumeType ?? 'gp2' };
  });
  if (!devices.some((device) => device.deviceName === '/dev/sda1')) {
    devices.unshift({ deviceName: '/dev/sda1', sizeGiB: 8, volumeType: 'gp2' });
  }
  return devices;
}
