/**
 * EC2's networking and access actions: VPCs, subnets, route tables, security groups and their
 * rules, and key pairs.
 */
import { createHash } from 'node:crypto';
import type { Ec2Account } from './aws-ec2-account.js';
import { type Ec2Action, tagSet } from './aws-ec2-action.js';
import type { IpPermission, SecurityGroup } from './aws-ec2-network.js';
import { newEc2Id } from './aws-ec2-run-instances.js';
import {
  applyFilters,
  filtersOf,
  listParams,
  listValues,
  pageOf,
  type QueryParams,
  requiredParam,
  tagFilterValues,
  tagsOf,
} from './aws-query-params.js';
import { ec2Response, type XmlObject } from './aws-xml.js';
import { Ec2ApiError } from './ec2-api-error.js';

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

export const EC2_NETWORK_ACTIONS: Readonly<Record<string, Ec2Action>> = {
  DescribeVpcs: describeVpcs,
  DescribeSubnets: describeSubnets,
  DescribeRouteTables: describeRouteTables,
  DescribeSecurityGroups: describeSecurityGroups,
  CreateSecurityGroup: createSecurityGroup,
  AuthorizeSecurityGroupIngress: authorizeAction('ingress', 'AuthorizeSecurityGroupIngress'),
  AuthorizeSecurityGroupEgress: authorizeAction('egress', 'AuthorizeSecurityGroupEgress'),
  ImportKeyPair: importKeyPair,
  DescribeKeyPairs: describeKeyPairs,
  DeleteKeyPair: deleteKeyPair,
};
