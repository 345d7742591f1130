import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  CreateTagsCommand,
  DescribeAvailabilityZonesCommand,
  DescribeImagesCommand,
  DescribeInstanceTypesCommand,
  DescribeRegionsCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSpotPriceHistoryCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  paginateDescribeInstanceTypes,
  paginateDescribeSpotPriceHistory,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AwsEmulator } from './aws-emulator.js';
import { sdkClients, startTestEmulator } from './aws-emulator.test.helpers.js';

let emulator: AwsEmulator;
let ec2: ReturnType<typeof sdkClients>['ec2'];
beforeAll(async () => {
  ({ emulator } = await startTestEmulator());
  ec2 = sdkClients(emulator).ec2;
});
afterAll(async () => {
  await emulator.close();
});

describe('regions, zones and instance types', () => {
  it('lists the emulated regions and the zones of the signing region', async () => {
    const regions = await ec2.send(new DescribeRegionsCommand({}));
    expect(regions.Regions?.map((region) => region.RegionName)).toEqual([
      'us-east-1',
      'us-west-2',
      'eu-west-1',
    ]);
    const zones = await sdkClients(emulator, 'us-west-2').ec2.send(new DescribeAvailabilityZonesCommand({}));
    expect(zones.AvailabilityZones?.map((zone) => [zone.ZoneName, zone.ZoneId, zone.State])).toEqual([
      ['us-west-2a', 'usw2-az1', 'available'],
      ['us-west-2b', 'usw2-az2', 'available'],
      ['us-west-2c', 'usw2-az3', 'available'],
      ['us-west-2d', 'usw2-az4', 'available'],
    ]);
  });

  it('describes GPUs as AWS does and pages through every type of the region', async () => {
    const one = await ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: ['p4d.24xlarge', 'c5.xlarge'] }),
    );
    const p4d = one.InstanceTypes?.find((each) => each.InstanceType === 'p4d.24xlarge');
    expect(p4d).toMatchObject({
      VCpuInfo: { DefaultVCpus: 96 },
      MemoryInfo: { SizeInMiB: 1179648 },
      GpuInfo: {
        Gpus: [{ Name: 'A100', Manufacturer: 'NVIDIA', Count: 8, MemoryInfo: { SizeInMiB: 40960 } }],
        TotalGpuMemoryInMiB: 327680,
      },
      NetworkInfo: { EfaSupported: true, EfaInfo: { MaximumEfaInterfaces: 4 } },
    });
    expect(one.InstanceTypes?.find((each) => each.InstanceType === 'c5.xlarge')?.GpuInfo).toBeUndefined();

    const pageSizes: number[] = [];
    const names: string[] = [];
    for await (const page of paginateDescribeInstanceTypes({ client: ec2, pageSize: 20 }, {})) {
      pageSizes.push(page.InstanceTypes?.length ?? 0);
      names.push(...(page.InstanceTypes ?? []).map((each) => each.InstanceType ?? ''));
    }
    expect(pageSizes.length).toBeGreaterThan(1);
    expect(pageSizes.slice(0, -1).every((size) => size === 20)).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(emulator.data.typesIn('us-east-1').map((spec) => spec.name));

    await expect(
      ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ['g99.huge' as 'g5.xlarge'] })),
    ).rejects.toMatchObject({
      name: 'InvalidInstanceType',
    });
    const efa = await ec2.send(
      new DescribeInstanceTypesCommand({
        Filters: [{ Name: 'network-info.efa-supported', Values: ['true'] }],
      }),
    );
    expect(efa.InstanceTypes?.every((each) => each.NetworkInfo?.EfaSupported)).toBe(true);
  });

  it("has EC2's small t3 types (t3.micro is dstack's default gateway type) in every region, priced", async () => {
    const answer = await ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: ['t3.nano', 't3.micro', 't3.small', 't3.medium'] }),
    );
    const described = Object.fromEntries(
      (answer.InstanceTypes ?? []).map((each) => [
        each.InstanceType,
        [
          each.VCpuInfo?.DefaultVCpus,
          each.VCpuInfo?.DefaultCores,
          each.MemoryInfo?.SizeInMiB,
          each.ProcessorInfo?.SupportedArchitectures,
          each.GpuInfo,
          each.BurstablePerformanceSupported,
        ],
      ]),
    );
    expect(described).toEqual({
      't3.nano': [2, 1, 512, ['x86_64'], undefined, true],
      't3.micro': [2, 1, 1024, ['x86_64'], undefined, true],
      't3.small': [2, 1, 2048, ['x86_64'], undefined, true],
      't3.medium': [2, 1, 4096, ['x86_64'], undefined, true],
    });
    const c5 = await ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ['c5.xlarge'] }));
    expect(c5.InstanceTypes?.[0]?.BurstablePerformanceSupported).toBe(false);
    // The price list's on-demand Linux prices, in every emulated region and zone t3.medium has.
    const prices: Record<string, Record<string, number>> = {
      'us-east-1': { 't3.nano': 0.0052, 't3.micro': 0.0104, 't3.small': 0.0208 },
      'us-west-2': { 't3.nano': 0.0052, 't3.micro': 0.0104, 't3.small': 0.0208 },
      'eu-west-1': { 't3.nano': 0.0057, 't3.micro': 0.0114, 't3.small': 0.0228 },
    };
    for (const [region, byType] of Object.entries(prices)) {
      const mediumZones = emulator.data.offerings
        .filter((each) => each.instanceType === 't3.medium' && each.region === region)
        .map((each) => each.zone);
      for (const [type, price] of Object.entries(byType)) {
        const offered = emulator.data.offerings.filter(
          (each) => each.instanceType === type && each.region === region,
        );
        expect(offered.map((each) => each.zone)).toEqual(mediumZones);
        expect(new Set(offered.map((each) => each.onDemandPrice))).toEqual(new Set([price]));
        expect(offered.every((each) => (each.spotPrice ?? 0) > 0 && (each.spotPrice ?? 0) < price)).toBe(
          true,
        );
      }
    }
  });

  it('gives spot prices per zone of the region (Linux/UNIX), paged', async () => {
    const entries = [];
    for await (const page of paginateDescribeSpotPriceHistory(
      { client: ec2, pageSize: 2 },
      {
        InstanceTypes: ['g5.xlarge'],
        ProductDescriptions: ['Linux/UNIX'],
        StartTime: new Date(),
      },
    )) {
      entries.push(...(page.SpotPriceHistory ?? []));
    }
    const expected = emulator.data.offerings.filter(
      (each) =>
        each.instanceType === 'g5.xlarge' && each.region === 'us-east-1' && each.spotPrice !== undefined,
    );
    expect(entries.map((each) => [each.AvailabilityZone, Number(each.SpotPrice)])).toEqual(
      expected.map((each) => [each.zone, each.spotPrice]),
    );
    const zoneOnly = await ec2.send(
      new DescribeSpotPriceHistoryCommand({
        InstanceTypes: ['g5.xlarge'],
        Filters: [{ Name: 'availability-zone', Values: ['us-east-1a'] }],
      }),
    );
    expect(zoneOnly.SpotPriceHistory?.map((each) => each.AvailabilityZone)).toEqual(['us-east-1a']);
  });
});

describe('network', () => {
  it('has a default VPC with one public default subnet per zone, routed through an internet gateway', async () => {
    const vpcs = await ec2.send(
      new DescribeVpcsCommand({ Filters: [{ Name: 'isDefault', Values: ['true'] }] }),
    );
    const vpcId = vpcs.Vpcs?.[0]?.VpcId;
    expect(vpcs.Vpcs).toHaveLength(1);
    expect(vpcs.Vpcs?.[0]?.IsDefault).toBe(true);
    const subnets = await ec2.send(
      new DescribeSubnetsCommand({ Filters: [{ Name: 'vpc-id', Values: [vpcId ?? ''] }] }),
    );
    const zones = await ec2.send(new DescribeAvailabilityZonesCommand({}));
    expect(subnets.Subnets?.map((each) => each.AvailabilityZone)).toEqual(
      zones.AvailabilityZones?.map((each) => each.ZoneName),
    );
    expect(subnets.Subnets?.every((each) => each.MapPublicIpOnLaunch && each.DefaultForAz)).toBe(true);

    const explicit = await ec2.send(
      new DescribeRouteTablesCommand({
        Filters: [{ Name: 'association.subnet-id', Values: [subnets.Subnets?.[0]?.SubnetId ?? ''] }],
      }),
    );
    expect(explicit.RouteTables).toEqual([]);
    const main = await ec2.send(
      new DescribeRouteTablesCommand({
        Filters: [
          { Name: 'association.main', Values: ['true'] },
          { Name: 'vpc-id', Values: [vpcId ?? ''] },
        ],
      }),
    );
    expect(main.RouteTables?.[0]?.Routes?.some((route) => route.GatewayId?.startsWith('igw-'))).toBe(true);
  });

  it('creates a security group once (InvalidGroup.Duplicate after) and rejects a duplicate rule', async () => {
    const vpcId = (await ec2.send(new DescribeVpcsCommand({}))).Vpcs?.[0]?.VpcId;
    const created = await ec2.send(
      new CreateSecurityGroupCommand({
        GroupName: 'dstack_security_group_main',
        Description: 'dstack',
        VpcId: vpcId,
      }),
    );
    expect(created.GroupId).toMatch(/^sg-[0-9a-f]{17}$/);
    await expect(
      ec2.send(
        new CreateSecurityGroupCommand({
          GroupName: 'dstack_security_group_main',
          Description: 'x',
          VpcId: vpcId,
        }),
      ),
    ).rejects.toMatchObject({
      name: 'InvalidGroup.Duplicate',
      message: `The security group 'dstack_security_group_main' already exists for VPC '${vpcId}'`,
    });

    const sshRule = {
      GroupId: created.GroupId,
      IpPermissions: [{ IpProtocol: 'tcp', FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
    };
    await ec2.send(new AuthorizeSecurityGroupIngressCommand(sshRule));
    await ec2.send(
      new AuthorizeSecurityGroupIngressCommand({
        GroupId: created.GroupId,
        IpPermissions: [{ IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: created.GroupId }] }],
      }),
    );
    await expect(ec2.send(new AuthorizeSecurityGroupIngressCommand(sshRule))).rejects.toMatchObject({
      name: 'InvalidPermission.Duplicate',
    });

    const described = await ec2.send(
      new DescribeSecurityGroupsCommand({
        Filters: [
          { Name: 'group-name', Values: ['dstack_security_group_main'] },
          { Name: 'vpc-id', Values: [vpcId ?? ''] },
        ],
      }),
    );
    const group = described.SecurityGroups?.[0];
    expect(group?.IpPermissions).toEqual([
      expect.objectContaining({
        IpProtocol: 'tcp',
        FromPort: 22,
        ToPort: 22,
        IpRanges: [{ CidrIp: '0.0.0.0/0' }],
      }),
      expect.objectContaining({ IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: created.GroupId }] }),
    ]);
    expect(group?.IpPermissionsEgress?.[0]).toMatchObject({
      IpProtocol: '-1',
      IpRanges: [{ CidrIp: '0.0.0.0/0' }],
    });

    await ec2.send(
      new CreateTagsCommand({
        Resources: [created.GroupId ?? ''],
        Tags: [{ Key: 'owner', Value: 'dstack' }],
      }),
    );
    const tagged = await ec2.send(
      new DescribeSecurityGroupsCommand({ Filters: [{ Name: 'tag:owner', Values: ['dstack'] }] }),
    );
    expect(tagged.SecurityGroups?.map((each) => each.GroupId)).toEqual([created.GroupId]);
  });
});

describe('DescribeImages', () => {
  it('finds the Deep Learning AMI by owner and name pattern, and dstack images by name', async () => {
    const dlami = await ec2.send(
      new DescribeImagesCommand({
        Owners: ['amazon'],
        Filters: [
          { Name: 'name', Values: ['Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *'] },
        ],
      }),
    );
    expect(dlami.Images?.map((each) => [each.OwnerId, each.State])).toEqual([
      ['898082745236', 'available'],
      ['898082745236', 'available'],
    ]);
    const dstack = await ec2.send(
      new DescribeImagesCommand({ Filters: [{ Name: 'name', Values: ['dstack-0.19.*'] }] }),
    );
    expect(dstack.Images?.map((each) => each.Name)).toEqual(['dstack-0.19.40']);
    const elsewhere = await sdkClients(emulator, 'eu-west-1').ec2.send(
      new DescribeImagesCommand({ Filters: [{ Name: 'name', Values: ['dstack-0.19.*'] }] }),
    );
    expect(elsewhere.Images?.[0]?.ImageId).not.toBe(dstack.Images?.[0]?.ImageId);
  });
});
