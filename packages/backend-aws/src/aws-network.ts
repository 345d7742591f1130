/**
 * Where an instance goes in a region (dstack's AWS network rules): the VPC (`vpc_ids[region]`,
 * the VPC tagged `vpc_name`, else the default VPC when `default_vpcs` allows it), one subnet per
 * availability zone (public ones — a route through an `igw-` — when `public_ips` is on), and the
 * project's security group `dstack_security_group_{project}` with SSH open, created once:
 * a concurrent creation (`InvalidGroup.Duplicate`) or rule (`InvalidPermission.Duplicate`) is fine.
 */
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  type EC2Client,
  type Filter,
} from '@aws-sdk/client-ec2';
import { BackendError } from '@dstack/core';
import { awsErrorCode } from './aws-clients.js';
import type { AwsConfig } from './aws-config.js';

/** dstack's name of the project's security group. */
export function securityGroupName(projectName: string): string {
  return `dstack_security_group_${projectName}`;
}

/** A project's security group: its name, what it is for, the ports open to the world. */
export interface SecurityGroupKind {
  name(projectName: string): string;
  description: string;
  publicPorts: readonly number[];
}

/** The instances' group: SSH from anywhere, everything between the project's instances. */
export const INSTANCES_SECURITY_GROUP: SecurityGroupKind = {
  name: securityGroupName,
  description: 'dstack instances',
  publicPorts: [22],
};

/** The gateways' group (dstack's `dstack_gw_sg_…`): SSH, HTTP and HTTPS from anywhere. */
export const GATEWAYS_SECURITY_GROUP: SecurityGroupKind = {
  name: (projectName) => `dstack_gw_sg_${projectName}`,
  description: 'dstack gateways',
  publicPorts: [22, 80, 443],
};

/** The VPC id to launch in, in `region`. */
export async function findVpcId(
  ec2: EC2Client,
  config: Pick<AwsConfig, 'vpc_ids' | 'vpc_name' | 'default_vpcs'>,
  region: string,
): Promise<string> {
  const configured = config.vpc_ids?.[region];
  if (configured) return configured;
  const useDefault = config.default_vpcs ?? (config.vpc_name == null && config.vpc_ids == null);
  let filter: Filter;
  if (config.vpc_name != null) filter = { Name: 'tag:Name', Values: [config.vpc_name] };
  else if (useDefault) filter = { Name: 'isDefault', Values: ['true'] };
  else throw new BackendError(`No VPC for ${region}: vpc_ids does not list it and default_vpcs is false`);
  const answer = await ec2.send(new DescribeVpcsCommand({ Filters: [filter] }));
  const vpcId = answer.Vpcs?.[0]?.VpcId;
  if (!vpcId) {
    const what = config.vpc_name != null ? `named ${JSON.stringify(config.vpc_name)}` : 'default';
    throw new BackendError(`No ${what} VPC in ${region}`);
  }
  return vpcId;
}

/** Whether the subnet's route table (its own, else the VPC's main one) routes through an internet gateway. */
async function isPublicSubnet(ec2: EC2Client, vpcId: string, subnetId: string): Promise<boolean> {
  let tables = (
    await ec2.send(
      new DescribeRouteTablesCommand({ Filters: [{ Name: 'association.subnet-id', Values: [subnetId] }] }),
    )
  ).RouteTables;
  if (!tables || tables.length === 0) {
    tables = (
      await ec2.send(
        new DescribeRouteTablesCommand({
          Filters: [
            { Name: 'association.main', Values: ['true'] },
            { Name: 'vpc-id', Values: [vpcId] },
          ],
        }),
      )
    ).RouteTables;
  }
  return (tables ?? []).some((table) =>
    (table.Routes ?? []).some((route) => route.GatewayId?.startsWith('igw-')),
  );
}

/** One subnet per availability zone of the VPC (public ones when `publicIps`), zone → subnet id. */
export async function subnetsByZone(
  ec2: EC2Client,
  vpcId: string,
  publicIps: boolean,
): Promise<Map<string, string>> {
  const answer = await ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'vpc-id', Values: [vpcId] }] }),
  );
  const byZone = new Map<string, string>();
  for (const subnet of answer.Subnets ?? []) {
    if (!subnet.SubnetId || !subnet.AvailabilityZone || byZone.has(subnet.AvailabilityZone)) continue;
    if (publicIps && !(await isPublicSubnet(ec2, vpcId, subnet.SubnetId))) continue;
    byZone.set(subnet.AvailabilityZone, subnet.SubnetId);
  }
  return byZone;
}

async function describeGroupId(ec2: EC2Client, name: string, vpcId: string): Promise<string | undefined> {
  const answer = await ec2.send(
    new DescribeSecurityGroupsCommand({
      Filters: [
        { Name: 'group-name', Values: [name] },
        { Name: 'vpc-id', Values: [vpcId] },
      ],
    }),
  );
  return answer.SecurityGroups?.[0]?.GroupId;
}

/** The project's security group in the VPC, created with SSH (22) open and traffic within the group allowed. */
export async function ensureSecurityGroup(
  ec2: EC2Client,
  projectName: string,
  vpcId: string,
  kind: SecurityGroupKind = INSTANCES_SECURITY_GROUP,
): Promise<string> {
  const name = kind.name(projectName);
  const existing = await describeGroupId(ec2, name, vpcId);
  if (existing) return existing;
  let groupId: string | undefined;
  try {
    const created = await ec2.send(
      new CreateSecurityGroupCommand({
        GroupName: name,
        Description: `${kind.description} of project ${projectName}`,
        VpcId: vpcId,
      }),
    );
    groupId = created.GroupId;
  } catch (error) {
    if (awsErrorCode(error) !== 'InvalidGroup.Duplicate') throw error;
    groupId = await describeGroupId(ec2, name, vpcId);
  }
  if (!groupId) throw new BackendError(`Security group ${name} in ${vpcId} has no id`);
  try {
    await ec2.send(
      new AuthorizeSecurityGroupIngressCommand({
        GroupId: groupId,
        IpPermissions: [
          ...kind.publicPorts.map((port) => ({
            IpProtocol: 'tcp',
            FromPort: port,
            ToPort: port,
            IpRanges: [{ CidrIp: '0.0.0.0/0' }],
          })),
          { IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: groupId }] },
        ],
      }),
    );
  } catch (error) {
    if (awsErrorCode(error) !== 'InvalidPermission.Duplicate') throw error;
  }
  return groupId;
}
