/**
 * The EC2 actions the emulator answers (those dstack's AWS backend and gpuhunt's collector call),
 * each rendering the XML members the SDK reads.
 */
import { createHash } from 'node:crypto';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import type { Ec2Account } from './aws-ec2-account.js';
import { EC2_CAPACITY_RESERVATION_ACTIONS } from './aws-ec2-capacity-reservation-actions.js';
import { EC2_STATE_CODES, type Ec2Instance, type Ec2InstanceStateName } from './aws-ec2-instances.js';
import type { IpPermission, SecurityGroup } from './aws-ec2-network.js';
import { newEc2Id, runInstances } from './aws-ec2-run-instances.js';
import { EC2_VOLUME_ACTIONS } from './aws-ec2-volume-actions.js';
import {
  applyFilters,
  booleanParam,
  filtersOf,
  listParams,
  listValues,
  pageOf,
  type QueryParams,
  requiredParam,
  tagFilterValues,
  tagsOf,
} from './aws-query-params.js';
import { ec2Response, type XmlObject, type XmlValue } from './aws-xml.js';
import { Ec2ApiError, instanceNotFound } from './ec2-api-error.js';

type Ec2Action = (account: Ec2Account, region: string, params: QueryParams) => EmulatorResponse;

const INSTANCE_ID_PATTERN = /^i-[0-9a-f]{8,17}$/;

function tagSet(tags: ReadonlyMap<string, string>): XmlValue {
  return tags.size === 0 ? undefined : [...tags].map(([key, value]) => ({ key, value }));
}

/** `instanceLifecycle`: spot, capacity-block, or nothing for an on-demand instance. */
function lifecycleOf(instance: Ec2Instance): string | undefined {
  if (instance.market === 'spot') return 'spot';
  return instance.capacityBlock ? 'capacity-block' : undefined;
}

function stateOf(name: Ec2InstanceStateName): XmlObject {
  return { code: EC2_STATE_CODES[name], name };
}

function instanceXml(
  account: Ec2Account,
  instance: Ec2Instance,
  forceState?: Ec2InstanceStateName,
): XmlObject {
  const { instances } = account;
  const state = forceState ?? instances.state(instance);
  const privateIp =
    forceState === 'pending' && !instance.hostLaunch
      ? instance.madeUpPrivateIp
      : instances.privateIp(instance);
  const publicIp = forceState === undefined ? instances.publicIp(instance) : undefined;
  const spec = account.data.instanceTypes.get(instance.type);
  const launchTime = new Date(instance.launchedAt).toISOString();
  const groups = instance.securityGroupIds.map((groupId) => ({
    groupId,
    groupName: account.network.securityGroup(instance.region, groupId).name,
  }));
  const networkInterfaceId = `eni-${createHash('sha256').update(instance.id).digest('hex').slice(0, 17)}`;
  return {
    instanceId: instance.id,
    imageId: instance.imageId,
    instanceState: stateOf(state),
    privateDnsName: privateIp ? `ip-${privateIp.replace(/\./g, '-')}.ec2.internal` : '',
    dnsName: publicIp ? `ec2-${publicIp.replace(/\./g, '-')}.compute-1.amazonaws.com` : '',
    reason: instance.stateTransitionReason,
    keyName: instance.keyName,
    amiLaunchIndex: instance.launchIndex,
    productCodes: [],
    instanceType: instance.type,
    launchTime,
    placement: {
      availabilityZone: instance.zone,
      groupName: instance.placementGroup ?? '',
      tenancy: instance.tenancy,
    },
    monitoring: { state: 'disabled' },
    subnetId: state === 'terminated' ? undefined : instance.subnet.id,
    vpcId: state === 'terminated' ? undefined : instance.subnet.vpcId,
    privateIpAddress: privateIp,
    ipAddress: publicIp,
    sourceDestCheck: true,
    groupSet: groups,
    stateReason: instance.stateReason
      ? { code: instance.stateReason.code, message: instance.stateReason.message }
      : undefined,
    architecture: spec?.architecture ?? 'x86_64',
    rootDeviceType: 'ebs',
    rootDeviceName: '/dev/sda1',
    blockDeviceMapping:
      state === 'terminated'
        ? []
        : [
            ...instance.blockDevices.map((device) => ({
              deviceName: device.deviceName,
              ebs: {
                volumeId: device.volumeId,
                status: 'attached',
                attachTime: launchTime,
                deleteOnTermination: true,
              },
            })),
            ...account.volumes
              .all()
              .filter((volume) => volume.attachment?.instanceId === instance.id)
              .map((volume) => ({
                deviceName: volume.attachment?.device,
                ebs: {
                  volumeId: volume.id,
                  status: account.volumes.attachmentStatus(volume),
                  attachTime: new Date(volume.attachment?.attachedAt ?? 0).toISOString(),
                  deleteOnTermination: false,
                },
              })),
          ],
    instanceLifecycle: lifecycleOf(instance),
    spotInstanceRequestId: instance.spotInstanceRequestId,
    capacityReservationId: instance.capacityReservationId,
    // EC2 answers the target when the launch named one, else the preference.
    capacityReservationSpecification: instance.capacityReservationTargeted
      ? { capacityReservationTarget: { capacityReservationId: instance.capacityReservationId } }
      : { capacityReservationPreference: instance.capacityReservationPreference },
    virtualizationType: 'hvm',
    clientToken: instance.clientToken ?? '',
    tagSet: tagSet(instance.tags),
    hypervisor: 'xen',
    iamInstanceProfile: instance.iamInstanceProfile
      ? {
          arn: `arn:aws:iam::${account.accountId}:instance-profile/${instance.iamInstanceProfile}`,
          id: 'AIPAEMULATOR',
        }
      : undefined,
    networkInterfaceSet:
      state === 'terminated'
        ? []
        : [
            {
              networkInterfaceId,
              subnetId: instance.subnet.id,
              vpcId: instance.subnet.vpcId,
              description: '',
              ownerId: account.accountId,
              status: 'in-use',
              privateIpAddress: privateIp,
              sourceDestCheck: true,
              groupSet: groups,
              attachment: {
                attachmentId: `eni-attach-${networkInterfaceId.slice(4)}`,
                deviceIndex: 0,
                networkCardIndex: 0,
                status: 'attached',
                attachTime: launchTime,
                deleteOnTermination: true,
              },
              association: publicIp ? { publicIp, publicDnsName: '', ipOwnerId: 'amazon' } : undefined,
              interfaceType: 'interface',
            },
          ],
    ebsOptimized: false,
    enaSupport: true,
    cpuOptions: spec
      ? { coreCount: Math.max(1, spec.vcpus / 2), threadsPerCore: spec.vcpus > 1 ? 2 : 1 }
      : undefined,
    metadataOptions: { state: 'applied', httpTokens: 'required', httpEndpoint: 'enabled' },
  };
}

/** Instances for a Describe by id: every id must be known (and past its NotFound window). */
function instancesByIds(account: Ec2Account, region: string, ids: readonly string[]): Ec2Instance[] {
  const malformed = ids.filter((id) => !INSTANCE_ID_PATTERN.test(id));
  if (malformed.length > 0) {
    throw new Ec2ApiError(400, 'InvalidInstanceID.Malformed', `Invalid id: "${malformed[0]}"`);
  }
  const found = ids.map((id) => account.instances.find(region, id));
  const missing = ids.filter(
    (_id, index) =>
      found[index] === undefined || account.instances.inNotFoundWindow(found[index] as Ec2Instance),
  );
  if (missing.length > 0) throw instanceNotFound(missing);
  return found as Ec2Instance[];
}

function instanceFilterValues(
  account: Ec2Account,
  instance: Ec2Instance,
  name: string,
): string[] | undefined {
  switch (name) {
    case 'instance-id':
      return [instance.id];
    case 'instance-state-name':
      return [account.instances.state(instance)];
    case 'instance-state-code':
      return [String(EC2_STATE_CODES[account.instances.state(instance)])];
    case 'instance-type':
      return [instance.type];
    case 'availability-zone':
      return [instance.zone];
    case 'vpc-id':
      return [instance.subnet.vpcId];
    case 'subnet-id':
      return [instance.subnet.id];
    case 'instance-lifecycle': {
      const lifecycle = lifecycleOf(instance);
      return lifecycle ? [lifecycle] : [];
    }
    case 'capacity-reservation-id':
      return instance.capacityReservationId ? [instance.capacityReservationId] : [];
    case 'tenancy':
      return [instance.tenancy];
    case 'reservation-id':
      return [instance.reservationId];
    case 'client-token':
      return instance.clientToken ? [instance.clientToken] : [];
    case 'image-id':
      return [instance.imageId];
    case 'placement-group-name':
      return instance.placementGroup ? [instance.placementGroup] : [];
    default:
      return tagFilterValues(instance.tags, name);
  }
}

/** Consecutive instances of one reservation grouped, as `reservationSet/item` lists them. */
function reservationsOf(account: Ec2Account, instances: readonly Ec2Instance[]): XmlObject[] {
  const groups: Ec2Instance[][] = [];
  for (const instance of instances) {
    const last = groups.at(-1);
    if (last?.[0]?.reservationId === instance.reservationId) last.push(instance);
    else groups.push([instance]);
  }
  return groups.map((group) => ({
    reservationId: group[0]?.reservationId,
    ownerId: account.accountId,
    groupSet: [],
    instancesSet: group.map((instance) => instanceXml(account, instance)),
  }));
}

const describeInstances: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'InstanceId');
  if (ids.length > 0 && params.MaxResults !== undefined) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterCombination',
      'The parameter instancesSet cannot be used with the parameter maxResults',
    );
  }
  const candidates =
    ids.length > 0
      ? instancesByIds(account, region, ids)
      : account.instances
          .all()
          .filter(
            (each) =>
              each.region === region &&
              account.instances.isKnown(each) &&
              !account.instances.inNotFoundWindow(each),
          );
  const filtered = applyFilters(candidates, filtersOf(params), (instance, name) =>
    instanceFilterValues(account, instance, name),
  );
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 1000 });
  return ec2Response('DescribeInstances', { reservationSet: reservationsOf(account, page), nextToken });
};

const runInstancesAction: Ec2Action = (account, region, params) => {
  const { reservationId, instances } = runInstances(account, region, params);
  // RunInstances answers every new instance as pending, whatever has happened since.
  return ec2Response('RunInstances', {
    reservationId,
    ownerId: account.accountId,
    groupSet: [],
    instancesSet: instances.map((instance) => instanceXml(account, instance, 'pending')),
  });
};

const terminateInstances: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'InstanceId');
  if (ids.length === 0) requiredParam(params, 'InstanceId.1');
  const malformed = ids.filter((id) => !INSTANCE_ID_PATTERN.test(id));
  if (malformed.length > 0) {
    throw new Ec2ApiError(400, 'InvalidInstanceID.Malformed', `Invalid id: "${malformed[0]}"`);
  }
  // Terminate works on an instance still in its NotFound window: only Describe lags behind.
  const found = ids.map((id) => account.instances.find(region, id));
  const missing = ids.filter((_, index) => found[index] === undefined);
  if (missing.length > 0) throw instanceNotFound(missing);
  const changes = (found as Ec2Instance[]).map((instance) => {
    const { previous, current } = account.instances.terminate(instance);
    return { instanceId: instance.id, currentState: stateOf(current), previousState: stateOf(previous) };
  });
  return ec2Response('TerminateInstances', { instancesSet: changes });
};

const describeInstanceTypes: Ec2Action = (account, region, params) => {
  const offered = account.data.typesIn(region);
  const wanted = listValues(params, 'InstanceType');
  const unknown = wanted.filter((name) => !offered.some((spec) => spec.name === name));
  if (unknown.length > 0) {
    throw new Ec2ApiError(
      400,
      'InvalidInstanceType',
      `The following supplied instance types do not exist: [${unknown.join(', ')}]`,
    );
  }
  const selected = wanted.length > 0 ? offered.filter((spec) => wanted.includes(spec.name)) : offered;
  const filtered = applyFilters(selected, filtersOf(params), (spec, name) => {
    switch (name) {
      case 'instance-type':
        return [spec.name];
      case 'network-info.efa-supported':
        return [String(spec.maximumEfaInterfaces > 0)];
      case 'current-generation':
        return ['true'];
      case 'processor-info.supported-architecture':
        return [spec.architecture];
      case 'vcpu-info.default-vcpus':
        return [String(spec.vcpus)];
      default:
        return undefined;
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 100 });
  const instanceTypeSet = page.map((spec) => ({
    instanceType: spec.name,
    currentGeneration: true,
    burstablePerformanceSupported: spec.burstablePerformance,
    supportedUsageClasses: ['on-demand', 'spot'],
    supportedRootDeviceTypes: ['ebs'],
    processorInfo: { supportedArchitectures: [spec.architecture] },
    vCpuInfo: {
      defaultVCpus: spec.vcpus,
      defaultCores: Math.max(1, spec.vcpus / 2),
      defaultThreadsPerCore: 2,
    },
    memoryInfo: { sizeInMiB: spec.memoryMiB },
    gpuInfo: spec.gpu
      ? {
          gpus: [
            {
              name: spec.gpu.name,
              manufacturer: spec.gpu.manufacturer,
              count: spec.gpu.count,
              memoryInfo: { sizeInMiB: spec.gpu.memoryMiB },
            },
          ],
          totalGpuMemoryInMiB: spec.gpu.count * spec.gpu.memoryMiB,
        }
      : undefined,
    networkInfo: {
      efaSupported: spec.maximumEfaInterfaces > 0,
      efaInfo:
        spec.maximumEfaInterfaces > 0 ? { maximumEfaInterfaces: spec.maximumEfaInterfaces } : undefined,
      maximumNetworkInterfaces: 8,
      ipv4AddressesPerInterface: 30,
    },
  }));
  return ec2Response('DescribeInstanceTypes', { instanceTypeSet, nextToken });
};

const describeInstanceTypeOfferings: Ec2Action = (account, region, params) => {
  const locationType = params.LocationType ?? 'region';
  const offerings = account.data.offerings.filter((offering) => offering.region === region);
  const rows =
    locationType === 'availability-zone'
      ? offerings.map((each) => ({ instanceType: each.instanceType, location: each.zone }))
      : locationType === 'availability-zone-id'
        ? offerings.map((each) => ({ instanceType: each.instanceType, location: each.zoneId }))
        : [...new Set(offerings.map((each) => each.instanceType))].map((instanceType) => ({
            instanceType,
            location: region,
          }));
  const filtered = applyFilters(rows, filtersOf(params), (row, name) =>
    name === 'instance-type' ? [row.instanceType] : name === 'location' ? [row.location] : undefined,
  );
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 1000 });
  return ec2Response('DescribeInstanceTypeOfferings', {
    instanceTypeOfferingSet: page.map((row) => ({ ...row, locationType })),
    nextToken,
  });
};

const describeRegions: Ec2Action = (account, _region, params) => {
  const names = listValues(params, 'RegionName');
  const unknown = names.filter((name) => !account.data.regions.includes(name));
  if (unknown.length > 0) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', `Invalid region names: [${unknown.join(', ')}]`);
  }
  const regions = names.length > 0 ? names : [...account.data.regions];
  const filtered = applyFilters(regions, filtersOf(params), (region, name) =>
    name === 'region-name' ? [region] : name === 'opt-in-status' ? ['opt-in-not-required'] : undefined,
  );
  return ec2Response('DescribeRegions', {
    regionInfo: filtered.map((regionName) => ({
      regionName,
      regionEndpoint: `ec2.${regionName}.amazonaws.com`,
      optInStatus: 'opt-in-not-required',
    })),
  });
};

const describeAvailabilityZones: Ec2Action = (account, region, params) => {
  const names = listValues(params, 'ZoneName');
  const zones = account.data
    .zonesOf(region)
    .filter((zone) => names.length === 0 || names.includes(zone.name));
  const filtered = applyFilters(zones, filtersOf(params), (zone, name) => {
    switch (name) {
      case 'region-name':
        return [zone.region];
      case 'zone-name':
        return [zone.name];
      case 'zone-id':
        return [zone.id];
      case 'state':
        return ['available'];
      case 'zone-type':
        return ['availability-zone'];
      default:
        return undefined;
    }
  });
  return ec2Response('DescribeAvailabilityZones', {
    availabilityZoneInfo: filtered.map((zone) => ({
      zoneName: zone.name,
      zoneId: zone.id,
      zoneState: 'available',
      regionName: zone.region,
      groupName: zone.region,
      networkBorderGroup: zone.region,
      optInStatus: 'opt-in-not-required',
      zoneType: 'availability-zone',
      messageSet: [],
    })),
  });
};

const describeVpcs: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'VpcId');
  const vpcs = account.network.vpcs.filter((vpc) => vpc.region === region);
  for (const id of ids) account.network.vpc(region, id);
  const selected = ids.length > 0 ? vpcs.filter((vpc) => ids.includes(vpc.id)) : vpcs;
  const filtered = applyFilters(selected, filtersOf(params), (vpc, name) => {
    switch (name) {
      case 'vpc-id':
        return [vpc.id];
      case 'is-default':
      case 'isDefault':
        return [String(vpc.isDefault)];
      case 'cidr':
      case 'cidr-block':
        return [vpc.cidrBlock];
      case 'state':
        return ['available'];
      default:
        return tagFilterValues(vpc.tags, name);
    }
  });
  return ec2Response('DescribeVpcs', {
    vpcSet: filtered.map((vpc) => ({
      vpcId: vpc.id,
      ownerId: account.accountId,
      state: 'available',
      cidrBlock: vpc.cidrBlock,
      dhcpOptionsId: `dopt-${vpc.id.slice(4)}`,
      instanceTenancy: 'default',
      isDefault: vpc.isDefault,
      tagSet: tagSet(vpc.tags),
    })),
  });
};

const describeSubnets: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'SubnetId');
  for (const id of ids) account.network.subnet(region, id);
  const subnets = account.network.subnets.filter(
    (subnet) => subnet.region === region && (ids.length === 0 || ids.includes(subnet.id)),
  );
  const filtered = applyFilters(subnets, filtersOf(params), (subnet, name) => {
    switch (name) {
      case 'vpc-id':
        return [subnet.vpcId];
      case 'subnet-id':
        return [subnet.id];
      case 'availability-zone':
      case 'availabilityZone':
        return [subnet.zone];
      case 'availability-zone-id':
        return [subnet.zoneId];
      case 'default-for-az':
      case 'defaultForAz':
        return [String(subnet.defaultForAz)];
      case 'map-public-ip-on-launch':
        return [String(subnet.mapPublicIpOnLaunch)];
      case 'state':
        return ['available'];
      default:
        return tagFilterValues(subnet.tags, name);
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 1000 });
  return ec2Response('DescribeSubnets', {
    subnetSet: page.map((subnet) => ({
      subnetId: subnet.id,
      subnetArn: `arn:aws:ec2:${region}:${account.accountId}:subnet/${subnet.id}`,
      state: 'available',
      ownerId: account.accountId,
      vpcId: subnet.vpcId,
      cidrBlock: subnet.cidrBlock,
      availableIpAddressCount: 4091,
      availabilityZone: subnet.zone,
      availabilityZoneId: subnet.zoneId,
      defaultForAz: subnet.defaultForAz,
      mapPublicIpOnLaunch: subnet.mapPublicIpOnLaunch,
      tagSet: tagSet(subnet.tags),
    })),
    nextToken,
  });
};

const describeRouteTables: Ec2Action = (account, region, params) => {
  const tables = account.network.routeTables.filter((table) => table.region === region);
  // Default subnets have no explicit association: the VPC's main table routes them.
  const filtered = applyFilters(tables, filtersOf(params), (table, name) => {
    switch (name) {
      case 'vpc-id':
        return [table.vpcId];
      case 'route-table-id':
        return [table.id];
      case 'association.main':
        return [String(table.main)];
      case 'association.subnet-id':
        return [];
      default:
        return undefined;
    }
  });
  return ec2Response('DescribeRouteTables', {
    routeTableSet: filtered.map((table) => ({
      routeTableId: table.id,
      vpcId: table.vpcId,
      ownerId: account.accountId,
      routeSet: [
        {
          destinationCidrBlock: '172.31.0.0/16',
          gatewayId: 'local',
          state: 'active',
          origin: 'CreateRouteTable',
        },
        {
          destinationCidrBlock: '0.0.0.0/0',
          gatewayId: table.internetGatewayId,
          state: 'active',
          origin: 'CreateRoute',
        },
      ],
      associationSet: [
        {
          routeTableAssociationId: `rtbassoc-${table.id.slice(4)}`,
          routeTableId: table.id,
          main: table.main,
          associationState: { state: 'associated' },
        },
      ],
      tagSet: undefined,
    })),
  });
};

function permissionXml(permission: IpPermission): XmlObject {
  return {
    ipProtocol: permission.ipProtocol,
    fromPort: permission.fromPort,
    toPort: permission.toPort,
    groups: permission.groupIds.map((groupId) => ({ groupId })),
    ipRanges: permission.cidrIps.map((cidrIp) => ({ cidrIp })),
    ipv6Ranges: [],
    prefixListIds: [],
  };
}

function securityGroupXml(account: Ec2Account, group: SecurityGroup): XmlObject {
  return {
    ownerId: account.accountId,
    groupId: group.id,
    groupName: group.name,
    groupDescription: group.description,
    vpcId: group.vpcId,
    ipPermissions: group.ingress.map(permissionXml),
    ipPermissionsEgress: group.egress.map(permissionXml),
    tagSet: tagSet(group.tags),
  };
}

const describeSecurityGroups: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'GroupId');
  const names = listValues(params, 'GroupName');
  for (const id of ids) account.network.securityGroup(region, id);
  const groups = account.network.securityGroups.filter(
    (group) =>
      group.region === region &&
      (ids.length === 0 || ids.includes(group.id)) &&
      (names.length === 0 || names.includes(group.name)),
  );
  for (const name of names) {
    if (!groups.some((group) => group.name === name)) {
      throw new Ec2ApiError(
        400,
        'InvalidGroup.NotFound',
        `The security group '${name}' does not exist in default VPC '${account.network.defaultVpc(region).id}'`,
      );
    }
  }
  const filtered = applyFilters(groups, filtersOf(params), (group, name) => {
    switch (name) {
      case 'group-name':
        return [group.name];
      case 'group-id':
        return [group.id];
      case 'vpc-id':
        return [group.vpcId];
      case 'description':
        return [group.description];
      default:
        return tagFilterValues(group.tags, name);
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 1000 });
  return ec2Response('DescribeSecurityGroups', {
    securityGroupInfo: page.map((group) => securityGroupXml(account, group)),
    nextToken,
  });
};

const createSecurityGroup: Ec2Action = (account, region, params) => {
  const name = requiredParam(params, 'GroupName');
  const description = requiredParam(params, 'GroupDescription');
  const vpcId = params.VpcId ?? account.network.defaultVpc(region).id;
  const group = account.network.createSecurityGroup(region, name, description, vpcId);
  for (const specification of listParams(params, 'TagSpecification')) {
    if (specification.ResourceType === 'security-group') {
      for (const [key, value] of tagsOf(specification, 'Tag')) group.tags.set(key, value);
    }
  }
  return ec2Response('CreateSecurityGroup', {
    return: true,
    groupId: group.id,
    securityGroupArn: `arn:aws:ec2:${region}:${account.accountId}:security-group/${group.id}`,
    tagSet: tagSet(group.tags),
  });
};

function permissionsOf(params: QueryParams): IpPermission[] {
  const permissions = listParams(params, 'IpPermissions').map((item, index) => {
    const ipProtocol = item.IpProtocol;
    if (!ipProtocol) {
      throw new Ec2ApiError(
        400,
        'MissingParameter',
        `The request must contain the parameter IpPermissions.${index + 1}.IpProtocol`,
      );
    }
    const port = (name: string) => (item[name] === undefined ? undefined : Number(item[name]));
    return {
      ipProtocol: ipProtocol.toLowerCase(),
      fromPort: ipProtocol === '-1' ? undefined : port('FromPort'),
      toPort: ipProtocol === '-1' ? undefined : port('ToPort'),
      cidrIps: listParams(item, 'IpRanges').map((range) => range.CidrIp ?? ''),
      groupIds: [...listParams(item, 'Groups'), ...listParams(item, 'UserIdGroupPairs')].map(
        (pair) => pair.GroupId ?? '',
      ),
    };
  });
  if (permissions.length === 0) {
    throw new Ec2ApiError(400, 'MissingParameter', 'The request must contain the parameter ipPermissions');
  }
  return permissions;
}

function authorizeAction(direction: 'ingress' | 'egress', action: string): Ec2Action {
  return (account, region, params) => {
    const group = params.GroupId
      ? account.network.securityGroup(region, params.GroupId)
      : account.network.securityGroupByName(
          region,
          requiredParam(params, 'GroupName'),
          account.network.defaultVpc(region).id,
        );
    const permissions = permissionsOf(params);
    account.network.authorize(group, direction, permissions);
    return ec2Response(action, {
      return: true,
      securityGroupRuleSet: permissions.flatMap((permission) =>
        [...permission.cidrIps, ...permission.groupIds].map((peer) => ({
          securityGroupRuleId: newEc2Id('sgr'),
          groupId: group.id,
          groupOwnerId: account.accountId,
          isEgress: direction === 'egress',
          ipProtocol: permission.ipProtocol,
          fromPort: permission.fromPort ?? -1,
          toPort: permission.toPort ?? -1,
          cidrIpv4: peer.includes('/') ? peer : undefined,
          referencedGroupInfo: peer.startsWith('sg-') ? { groupId: peer } : undefined,
        })),
      ),
    });
  };
}

const describeImages: Ec2Action = (account, region, params) => {
  const owners = listValues(params, 'Owner');
  const ids = listValues(params, 'ImageId');
  const images = account.images.filter(
    (image) =>
      image.region === region &&
      (ids.length === 0 || ids.includes(image.id)) &&
      (owners.length === 0 ||
        owners.some(
          (owner) => owner === image.ownerId || (owner === 'amazon' && image.ownerAlias === 'amazon'),
        )),
  );
  const filtered = applyFilters(images, filtersOf(params), (image, name) => {
    switch (name) {
      case 'name':
        return [image.name];
      case 'image-id':
        return [image.id];
      case 'owner-id':
        return [image.ownerId];
      case 'owner-alias':
        return image.ownerAlias ? [image.ownerAlias] : [];
      case 'state':
        return [image.state];
      case 'architecture':
        return [image.architecture];
      default:
        return undefined;
    }
  });
  return ec2Response('DescribeImages', {
    imagesSet: filtered.map((image) => ({
      imageId: image.id,
      imageLocation: `${image.ownerAlias ?? image.ownerId}/${image.name}`,
      imageState: image.state,
      imageOwnerId: image.ownerId,
      creationDate: image.creationDate,
      isPublic: true,
      architecture: image.architecture,
      imageType: 'machine',
      imageOwnerAlias: image.ownerAlias,
      name: image.name,
      description: image.description,
      rootDeviceType: 'ebs',
      rootDeviceName: '/dev/sda1',
      blockDeviceMapping: [
        { deviceName: '/dev/sda1', ebs: { volumeSize: 8, volumeType: 'gp3', deleteOnTermination: true } },
      ],
      virtualizationType: 'hvm',
      hypervisor: 'xen',
      enaSupport: true,
    })),
  });
};

const describeSpotPriceHistory: Ec2Action = (account, region, params) => {
  const types = listValues(params, 'InstanceType');
  const productDescriptions = listValues(params, 'ProductDescription');
  const zone = params.AvailabilityZone;
  const timestamp = new Date().toISOString();
  const rows = account.data.offerings.filter(
    (offering) =>
      offering.region === region &&
      offering.spotPrice !== undefined &&
      (types.length === 0 || types.includes(offering.instanceType)) &&
      (zone === undefined || offering.zone === zone),
  );
  const linuxOnly = productDescriptions.length === 0 || productDescriptions.includes('Linux/UNIX');
  const filtered = applyFilters(linuxOnly ? rows : [], filtersOf(params), (offering, name) => {
    switch (name) {
      case 'product-description':
        return ['Linux/UNIX'];
      case 'availability-zone':
        return [offering.zone];
      case 'instance-type':
        return [offering.instanceType];
      case 'spot-price':
        return [(offering.spotPrice ?? 0).toFixed(6)];
      default:
        return undefined;
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 1, max: 1000 });
  return ec2Response('DescribeSpotPriceHistory', {
    spotPriceHistorySet: page.map((offering) => ({
      instanceType: offering.instanceType,
      productDescription: 'Linux/UNIX',
      spotPrice: (offering.spotPrice ?? 0).toFixed(6),
      timestamp,
      availabilityZone: offering.zone,
    })),
    nextToken,
  });
};

const createTags: Ec2Action = (account, region, params) => {
  const resourceIds = listValues(params, 'ResourceId');
  if (resourceIds.length === 0) requiredParam(params, 'ResourceId.1');
  const tags = tagsOf(params, 'Tag');
  const targets = resourceIds.map((id) => {
    if (id.startsWith('i-')) {
      const instance = account.instances.find(region, id);
      if (!instance) throw instanceNotFound([id]);
      return instance.tags;
    }
    if (id.startsWith('sg-')) return account.network.securityGroup(region, id).tags;
    if (id.startsWith('vpc-')) return account.network.vpc(region, id).tags;
    if (id.startsWith('subnet-')) return account.network.subnet(region, id).tags;
    throw new Ec2ApiError(400, 'InvalidID', `The ID '${id}' is not valid`);
  });
  for (const target of targets) for (const [key, value] of tags) target.set(key, value);
  return ec2Response('CreateTags', { return: true });
};

const cancelSpotInstanceRequests: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'SpotInstanceRequestId');
  if (ids.length === 0) requiredParam(params, 'SpotInstanceRequestId.1');
  const known = new Set(
    account.instances
      .all()
      .filter((instance) => instance.region === region)
      .map((instance) => instance.spotInstanceRequestId),
  );
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new Ec2ApiError(
      400,
      'InvalidSpotInstanceRequestID.NotFound',
      `The spot instance request ID '${unknown[0]}' does not exist`,
    );
  }
  for (const id of ids) account.cancelledSpotRequests.add(id);
  return ec2Response('CancelSpotInstanceRequests', {
    spotInstanceRequestSet: ids.map((spotInstanceRequestId) => ({
      spotInstanceRequestId,
      state: 'cancelled',
    })),
  });
};

const importKeyPair: Ec2Action = (account, region, params) => {
  const name = requiredParam(params, 'KeyName');
  const material = Buffer.from(requiredParam(params, 'PublicKeyMaterial'), 'base64').toString('utf8');
  if (account.keyPairs.some((pair) => pair.region === region && pair.name === name)) {
    throw new Ec2ApiError(400, 'InvalidKeyPair.Duplicate', `The keypair already exists`);
  }
  const fingerprint = createHash('md5')
    .update(material)
    .digest('hex')
    .replace(/(..)(?!$)/g, '$1:');
  const pair = { name, region, id: newEc2Id('key'), fingerprint, publicKey: material.trim() };
  account.keyPairs.push(pair);
  return ec2Response('ImportKeyPair', { keyFingerprint: fingerprint, keyName: name, keyPairId: pair.id });
};

const describeKeyPairs: Ec2Action = (account, region, params) => {
  const names = listValues(params, 'KeyName');
  const pairs = account.keyPairs.filter((pair) => pair.region === region);
  const missing = names.filter((name) => !pairs.some((pair) => pair.name === name));
  if (missing.length > 0) {
    throw new Ec2ApiError(400, 'InvalidKeyPair.NotFound', `The key pair '${missing[0]}' does not exist`);
  }
  const selected = names.length > 0 ? pairs.filter((pair) => names.includes(pair.name)) : pairs;
  return ec2Response('DescribeKeyPairs', {
    keySet: selected.map((pair) => ({
      keyPairId: pair.id,
      keyName: pair.name,
      keyFingerprint: pair.fingerprint,
    })),
  });
};

const deleteKeyPair: Ec2Action = (account, region, params) => {
  const name = requiredParam(params, 'KeyName');
  const index = account.keyPairs.findIndex((pair) => pair.region === region && pair.name === name);
  if (index !== -1) account.keyPairs.splice(index, 1);
  return ec2Response('DeleteKeyPair', { return: true });
};

/** `DryRun=true`: EC2 checks permissions only and answers DryRunOperation (412). */
function dryRunOr(action: Ec2Action): Ec2Action {
  return (account, region, params) => {
    if (booleanParam(params, 'DryRun')) {
      throw new Ec2ApiError(412, 'DryRunOperation', 'Request would have succeeded, but DryRun flag is set.');
    }
    return action(account, region, params);
  };
}

export const EC2_ACTIONS: Readonly<Record<string, Ec2Action>> = Object.fromEntries(
  Object.entries({
    RunInstances: runInstancesAction,
    DescribeInstances: describeInstances,
    TerminateInstances: terminateInstances,
    DescribeInstanceTypes: describeInstanceTypes,
    DescribeInstanceTypeOfferings: describeInstanceTypeOfferings,
    DescribeRegions: describeRegions,
    DescribeAvailabilityZones: describeAvailabilityZones,
    DescribeVpcs: describeVpcs,
    DescribeSubnets: describeSubnets,
    DescribeRouteTables: describeRouteTables,
    DescribeSecurityGroups: describeSecurityGroups,
    CreateSecurityGroup: createSecurityGroup,
    AuthorizeSecurityGroupIngress: authorizeAction('ingress', 'AuthorizeSecurityGroupIngress'),
    AuthorizeSecurityGroupEgress: authorizeAction('egress', 'AuthorizeSecurityGroupEgress'),
    DescribeImages: describeImages,
    DescribeSpotPriceHistory: describeSpotPriceHistory,
    CreateTags: createTags,
    CancelSpotInstanceRequests: cancelSpotInstanceRequests,
    ImportKeyPair: importKeyPair,
    DescribeKeyPairs: describeKeyPairs,
    DeleteKeyPair: deleteKeyPair,
    ...EC2_VOLUME_ACTIONS,
    ...EC2_CAPACITY_RESERVATION_ACTIONS,
  }).map(([name, action]) => [name, dryRunOr(action)]),
);
