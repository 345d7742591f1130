/**
 * Gateway instances on EC2 (dstack's `create_gateway`): Canonical's Ubuntu 22.04 (the gateway needs
 * no Docker), `t3.micro` unless the configuration names a type, in the project's gateway security
 * group (SSH, HTTP, HTTPS open) and its instances' group (so the gateway reaches the replicas on
 * the VPC's internal addresses), with core's gateway user data. The launch waits until the
 * instance runs with its address, as dstack's does. `ClientToken` is the gateway's instance name:
 * a repeated launch finds the first instance.
 */
import {
  DescribeInstancesCommand,
  type EC2Client,
  type Instance,
  RunInstancesCommand,
  type RunInstancesCommandInput,
} from '@aws-sdk/client-ec2';
import {
  BackendError,
  buildGatewayUserData,
  type GatewayReplicaConfiguration,
  type GatewayReplicaProvisioningData,
  mergeTags,
  ProvisioningError,
} from '@dstack/core';
import type { AwsConfig } from './aws-config.js';
import type { AwsImageChoice } from './aws-images.js';
import { findImageId } from './aws-images.js';
import { findLaunchedInstance } from './aws-launched-instance.js';
import {
  ensureSecurityGroup,
  findVpcId,
  GATEWAYS_SECURITY_GROUP,
  INSTANCES_SECURITY_GROUP,
  subnetsByZone,
} from './aws-network.js';

/** dstack's default gateway instance type on AWS. */
export const DEFAULT_GATEWAY_INSTANCE_TYPE = 't3.micro';
/** The image gateways boot (dstack's `get_gateway_image_id`). */
export const GATEWAY_IMAGE: AwsImageChoice = {
  name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*',
  owner: '099720109477',
  user: 'ubuntu',
};
/** How long a launch waits for the instance to run with an address. */
const RUNNING_TIMEOUT_MS = 5 * 60_000;
const RUNNING_POLL_MS = 1_000;

async function waitUntilRunning(ec2: EC2Client, instanceId: string, publicIp: boolean): Promise<Instance> {
  const deadline = Date.now() + RUNNING_TIMEOUT_MS;
  for (;;) {
    const answer = await ec2
      .send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }))
      .catch(() => undefined);
    const instance = answer?.Reservations?.flatMap((reservation) => reservation.Instances ?? [])[0];
    const state = instance?.State?.Name;
    if (state === 'shutting-down' || state === 'terminated' || state === 'stopped') {
      throw new ProvisioningError(`Gateway instance ${instanceId} is ${state}`);
    }
    const address = publicIp ? instance?.PublicIpAddress : instance?.PrivateIpAddress;
    if (instance && state === 'running' && address) return instance;
    if (Date.now() > deadline) {
      throw new ProvisioningError(`Gateway instance ${instanceId} did not run with an address in time`);
    }
    await new Promise((resolve) => setTimeout(resolve, RUNNING_POLL_MS));
  }
}

export async function createGatewayInstance(
  ec2: EC2Client,
  awsConfig: AwsConfig,
  configuration: GatewayReplicaConfiguration,
): Promise<GatewayReplicaProvisioningData> {
  const region = configuration.region;
  let instance = await findLaunchedInstance(ec2, configuration.instance_name);
  if (!instance) {
    const vpcId = await findVpcId(ec2, awsConfig, region);
    const subnets = await subnetsByZone(ec2, vpcId, configuration.public_ip);
    const [zone, subnetId] = [...subnets.entries()].sort(([a], [b]) => a.localeCompare(b))[0] ?? [];
    if (!zone || !subnetId) throw new BackendError(`No usable subnet of ${vpcId} in ${region} for a gateway`);
    const [imageId, gatewayGroup, instancesGroup] = await Promise.all([
      findImageId(ec2, GATEWAY_IMAGE, region),
      ensureSecurityGroup(ec2, configuration.project_name, vpcId, GATEWAYS_SECURITY_GROUP),
      ensureSecurityGroup(ec2, configuration.project_name, vpcId, INSTANCES_SECURITY_GROUP),
    ]);
    const tags = mergeTags(
      {
        Name: configuration.instance_name,
        owner: 'dstack',
        dstack_project: configuration.project_name,
        dstack_gateway: configuration.instance_name,
      },
      awsConfig.tags,
      configuration.tags ?? undefined,
    );
    const input: RunInstancesCommandInput = {
      ImageId: imageId,
      InstanceType: (configuration.instance_type ??
        DEFAULT_GATEWAY_INSTANCE_TYPE) as RunInstancesCommandInput['InstanceType'],
      MinCount: 1,
      MaxCount: 1,
      ClientToken: configuration.instance_name,
      UserData: Buffer.from(buildGatewayUserData(configuration), 'utf8').toString('base64'),
      TagSpecifications: [
        { ResourceType: 'instance', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
      ],
      NetworkInterfaces: [
        {
          DeviceIndex: 0,
          SubnetId: subnetId,
          AssociatePublicIpAddress: configuration.public_ip,
          Groups: [gatewayGroup, instancesGroup],
        },
      ],
    };
    const answer = await ec2.send(new RunInstancesCommand(input));
    instance = answer.Instances?.[0];
    if (!instance?.InstanceId) throw new BackendError(`RunInstances in ${zone} returned no gateway instance`);
  }
  const running = await waitUntilRunning(ec2, instance.InstanceId as string, configuration.public_ip);
  const ipAddress = configuration.public_ip ? running.PublicIpAddress : running.PrivateIpAddress;
  return {
    instance_id: running.InstanceId as string,
    ip_address: ipAddress as string,
    region,
    availability_zone: running.Placement?.AvailabilityZone ?? null,
    backend_data: null,
  };
}
