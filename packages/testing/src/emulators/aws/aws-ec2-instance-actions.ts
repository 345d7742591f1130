/**
 * EC2's instance actions: RunInstances (launch rules in `aws-ec2-run-instances.ts`),
 * DescribeInstances with its filters, TerminateInstances and CancelSpotInstanceRequests.
 */
import { createHash } from 'node:crypto';
import type { Ec2Account } from './aws-ec2-account.js';
import { type Ec2Action, tagSet } from './aws-ec2-action.js';
import { EC2_STATE_CODES, type Ec2Instance, type Ec2InstanceStateName } from './aws-ec2-instances.js';
import { runInstances } from './aws-ec2-run-instances.js';
import {
  applyFilters,
  filtersOf,
  listValues,
  pageOf,
  requiredParam,
  tagFilterValues,
} from './aws-query-params.js';
import { ec2Response, type XmlObject } from './aws-xml.js';
import { Ec2ApiError, instanceNotFound } from './ec2-api-error.js';

const INSTANCE_ID_PATTERN = /^i-[0-9a-f]{8,17}$/;

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
    forceState === 'pending' && !instance.host ? instance.madeUpPrivateIp : instances.privateIp(instance);
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

export const EC2_INSTANCE_ACTIONS: Readonly<Record<string, Ec2Action>> = {
  RunInstances: runInstancesAction,
  DescribeInstances: describeInstances,
  TerminateInstances: terminateInstances,
  CancelSpotInstanceRequests: cancelSpotInstanceRequests,
};
