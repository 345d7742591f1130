/**
 * The network of the emulated account: per region a default VPC (172.31.0.0/16) with one
 * default subnet per availability zone (public: MapPublicIpOnLaunch, main route table through an
 * internet gateway), its `default` security group, and the groups callers create.
 */
import { createHash } from 'node:crypto';
import type { AwsEmulatorData } from './aws-emulator-data.js';
import { Ec2ApiError } from './ec2-api-error.js';

export interface Vpc {
  readonly id: string;
  readonly region: string;
  readonly cidrBlock: string;
  readonly isDefault: boolean;
  readonly tags: Map<string, string>;
}

export interface Subnet {
  readonly id: string;
  readonly vpcId: string;
  readonly region: string;
  readonly zone: string;
  readonly zoneId: string;
  readonly cidrBlock: string;
  /** The third octet of its addresses: 172.31.<octet>.x. */
  readonly octet: number;
  readonly mapPublicIpOnLaunch: boolean;
  readonly defaultForAz: boolean;
  readonly tags: Map<string, string>;
}

export interface RouteTable {
  readonly id: string;
  readonly vpcId: string;
  readonly region: string;
  readonly main: boolean;
  readonly internetGatewayId: string;
}

/** One rule of a security group, as AuthorizeSecurityGroupIngress/Egress take it. */
export interface IpPermission {
  readonly ipProtocol: string;
  readonly fromPort: number | undefined;
  readonly toPort: number | undefined;
  readonly cidrIps: readonly string[];
  readonly groupIds: readonly string[];
}

export interface SecurityGroup {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly vpcId: string;
  readonly region: string;
  readonly ingress: IpPermission[];
  readonly egress: IpPermission[];
  readonly tags: Map<string, string>;
}

/** A short id derived from a name, so ids stay the same from one emulator start to the next. */
export function stableId(prefix: string, ...parts: string[]): string {
  return `${prefix}-${createHash('sha256').update(parts.join('/')).digest('hex').slice(0, 17)}`;
}

export class Ec2Network {
  readonly vpcs: Vpc[] = [];
  readonly subnets: Subnet[] = [];
  readonly routeTables: RouteTable[] = [];
  readonly securityGroups: SecurityGroup[] = [];

  constructor(data: AwsEmulatorData) {
    for (const region of data.regions) {
      const vpc: Vpc = {
        id: stableId('vpc', region, 'default'),
        region,
        cidrBlock: '172.31.0.0/16',
        isDefault: true,
        tags: new Map(),
      };
      this.vpcs.push(vpc);
      data.zonesOf(region).forEach((zone, index) => {
        this.subnets.push({
          id: stableId('subnet', zone.name, 'default'),
          vpcId: vpc.id,
          region,
          zone: zone.name,
          zoneId: zone.id,
          cidrBlock: `172.31.${index * 16}.0/20`,
          octet: index * 16,
          mapPublicIpOnLaunch: true,
          defaultForAz: true,
          tags: new Map(),
        });
      });
      this.routeTables.push({
        id: stableId('rtb', region, 'main'),
        vpcId: vpc.id,
        region,
        main: true,
        internetGatewayId: stableId('igw', region, 'default'),
      });
      this.securityGroups.push({
        id: stableId('sg', region, 'default'),
        name: 'default',
        description: 'default VPC security group',
        vpcId: vpc.id,
        region,
        ingress: [],
        egress: [
          { ipProtocol: '-1', fromPort: undefined, toPort: undefined, cidrIps: ['0.0.0.0/0'], groupIds: [] },
        ],
        tags: new Map(),
      });
    }
  }

  defaultVpc(region: string): Vpc {
    const vpc = this.vpcs.find((each) => each.region === region && each.isDefault);
    if (!vpc) throw new Ec2ApiError(400, 'VPCIdNotSpecified', 'No default VPC for this user');
    return vpc;
  }

  vpc(region: string, id: string): Vpc {
    const vpc = this.vpcs.find((each) => each.region === region && each.id === id);
    if (!vpc) throw new Ec2ApiError(400, 'InvalidVpcID.NotFound', `The vpc ID '${id}' does not exist`);
    return vpc;
  }

  subnet(region: string, id: string): Subnet {
    const subnet = this.subnets.find((each) => each.region === region && each.id === id);
    if (!subnet)
      throw new Ec2ApiError(400, 'InvalidSubnetID.NotFound', `The subnet ID '${id}' does not exist`);
    return subnet;
  }

  /** The default subnet of `zone`. */
  defaultSubnet(region: string, zone: string): Subnet {
    const subnet = this.subnets.find(
      (each) => each.region === region && each.zone === zone && each.defaultForAz,
    );
    if (!subnet)
      throw new Ec2ApiError(400, 'InvalidParameterValue', `No default subnet for availability zone ${zone}`);
    return subnet;
  }

  securityGroup(region: string, id: string): SecurityGroup {
    const group = this.securityGroups.find((each) => each.region === region && each.id === id);
    if (!group)
      throw new Ec2ApiError(400, 'InvalidGroup.NotFound', `The security group '${id}' does not exist`);
    return group;
  }

  securityGroupByName(region: string, name: string, vpcId: string): SecurityGroup {
    const group = this.securityGroups.find(
      (each) => each.region === region && each.name === name && each.vpcId === vpcId,
    );
    if (!group) {
      throw new Ec2ApiError(
        400,
        'InvalidGroup.NotFound',
        `The security group '${name}' does not exist in default VPC '${vpcId}'`,
      );
    }
    return group;
  }

  createSecurityGroup(region: string, name: string, description: string, vpcId: string): SecurityGroup {
    this.vpc(region, vpcId);
    if (
      this.securityGroups.some((each) => each.region === region && each.name === name && each.vpcId === vpcId)
    ) {
      throw new Ec2ApiError(
        400,
        'InvalidGroup.Duplicate',
        `The security group '${name}' already exists for VPC '${vpcId}'`,
      );
    }
    const group: SecurityGroup = {
      id: stableId('sg', region, vpcId, name),
      name,
      description,
      vpcId,
      region,
      ingress: [],
      egress: [
        { ipProtocol: '-1', fromPort: undefined, toPort: undefined, cidrIps: ['0.0.0.0/0'], groupIds: [] },
      ],
      tags: new Map(),
    };
    this.securityGroups.push(group);
    return group;
  }

  /**
   * Adds rules to a group. As EC2 does, a rule that is already there (same protocol, ports and
   * peer) fails the whole call with InvalidPermission.Duplicate and nothing is added.
   */
  authorize(
    group: SecurityGroup,
    direction: 'ingress' | 'egress',
    permissions: readonly IpPermission[],
  ): void {
    const rules = direction === 'ingress' ? group.ingress : group.egress;
    const peersOf = (permission: IpPermission) => [
      ...permission.cidrIps.map((cidr) => ({ kind: 'cidr', peer: cidr })),
      ...permission.groupIds.map((id) => ({ kind: 'group', peer: id })),
    ];
    for (const permission of permissions) {
      for (const groupId of permission.groupIds) this.securityGroup(group.region, groupId);
      for (const { peer } of peersOf(permission)) {
        const existing = rules.some(
          (rule) =>
            rule.ipProtocol === permission.ipProtocol &&
            rule.fromPort === permission.fromPort &&
            rule.toPort === permission.toPort &&
            (rule.cidrIps.includes(peer) || rule.groupIds.includes(peer)),
        );
        if (existing) {
          const protocol = permission.ipProtocol === '-1' ? 'ALL' : permission.ipProtocol.toUpperCase();
          throw new Ec2ApiError(
            400,
            'InvalidPermission.Duplicate',
            `the specified rule "peer: ${peer}, ${protocol}, from port: ${permission.fromPort ?? 'ALL'}, to port: ${permission.toPort ?? 'ALL'}, ALLOW" already exists`,
          );
        }
      }
    }
    rules.push(...permissions);
  }
}
