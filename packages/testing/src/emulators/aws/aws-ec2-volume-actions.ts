/**
 * EBS (CreateVolume, DescribeVolumes, DeleteVolume, AttachVolume, DetachVolume) and placement
 * group (Create/Describe/DeletePlacementGroup) actions, with EC2's errors for each rule.
 */
import type { Ec2Account } from './aws-ec2-account.js';
import { type Ec2Action, tagSet } from './aws-ec2-action.js';
import { newEc2Id } from './aws-ec2-run-instances.js';
import type { Ec2Volume } from './aws-ec2-volumes.js';
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
import { ec2Response, type XmlObject } from './aws-xml.js';
import { Ec2ApiError, instanceNotFound } from './ec2-api-error.js';

const VOLUME_ID_PATTERN = /^vol-[0-9a-f]{8,17}$/;
/** The names an EBS volume may be attached as on a Linux instance (dstack uses /dev/sd[f-p]). */
const DEVICE_NAME_PATTERN = /^\/dev\/(sd[b-z]|xvd[b-z]|xvd[b-c][a-z])$/;
const VOLUME_TYPES = ['gp2', 'gp3', 'io1', 'io2', 'st1', 'sc1', 'standard'];
const PLACEMENT_STRATEGIES = ['cluster', 'spread', 'partition'];

function resourceTags(params: QueryParams, resourceType: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const specification of listParams(params, 'TagSpecification')) {
    if (specification.ResourceType === resourceType) {
      for (const [key, value] of tagsOf(specification, 'Tag')) tags.set(key, value);
    }
  }
  return tags;
}

function volumeNotFound(id: string): Ec2ApiError {
  return new Ec2ApiError(400, 'InvalidVolume.NotFound', `The volume '${id}' does not exist.`);
}

/**
 * EC2's answer to an id that cannot be a volume's: `InvalidVolumeID.Malformed`, saying what an
 * id looks like when the `vol-` prefix is missing (`vol1235` in dstack's docs gets this).
 */
function checkVolumeId(id: string): void {
  if (VOLUME_ID_PATTERN.test(id)) return;
  const expecting = id.startsWith('vol-') ? '' : ' (expecting "vol-...")';
  throw new Ec2ApiError(400, 'InvalidVolumeID.Malformed', `Invalid id: "${id}"${expecting}`);
}

function volumeOf(account: Ec2Account, region: string, id: string): Ec2Volume {
  checkVolumeId(id);
  const volume = account.volumes.find(region, id);
  if (!volume) throw volumeNotFound(id);
  return volume;
}

function attachmentXml(account: Ec2Account, volume: Ec2Volume): XmlObject | undefined {
  const attachment = volume.attachment;
  const status = account.volumes.attachmentStatus(volume);
  if (!attachment || !status) return undefined;
  return {
    volumeId: volume.id,
    instanceId: attachment.instanceId,
    device: attachment.device,
    status,
    attachTime: new Date(attachment.attachedAt).toISOString(),
    deleteOnTermination: false,
  };
}

function volumeXml(account: Ec2Account, volume: Ec2Volume): XmlObject {
  const attachment = attachmentXml(account, volume);
  return {
    volumeId: volume.id,
    size: volume.sizeGiB,
    snapshotId: '',
    availabilityZone: volume.zone,
    status: account.volumes.status(volume),
    createTime: new Date(volume.createdAt).toISOString(),
    attachmentSet: attachment ? [attachment] : [],
    tagSet: tagSet(volume.tags),
    volumeType: volume.volumeType,
    iops: volume.iops,
    throughput: volume.volumeType === 'gp3' ? 125 : undefined,
    encrypted: false,
    multiAttachEnabled: false,
  };
}

const createVolume: Ec2Action = (account, region, params) => {
  const clientToken = params.ClientToken || undefined;
  if (clientToken) {
    const known = account.volumes.byClientToken(region, clientToken);
    if (known) return ec2Response('CreateVolume', volumeXml(account, known));
  }
  const zoneName = requiredParam(params, 'AvailabilityZone');
  const zone = account.data.zone(zoneName);
  if (!zone || zone.region !== region) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', `Invalid availability zone: [${zoneName}]`);
  }
  const volumeType = params.VolumeType ?? 'gp2';
  if (!VOLUME_TYPES.includes(volumeType)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${volumeType}) for parameter volumeType is invalid.`,
    );
  }
  const size = Number(requiredParam(params, 'Size'));
  if (!Number.isInteger(size) || size < 1 || size > 16384) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Volume of ${params.Size}GiB is too large or too small for ${volumeType}; the size must be 1-16384 GiB.`,
    );
  }
  const iops =
    params.Iops !== undefined ? Number(params.Iops) : volumeType === 'gp3' ? 3000 : Math.max(100, 3 * size);
  const volume = account.volumes.create({
    id: newEc2Id('vol'),
    region,
    zone: zoneName,
    sizeGiB: size,
    volumeType,
    iops,
    tags: resourceTags(params, 'volume'),
    clientToken,
  });
  return ec2Response('CreateVolume', volumeXml(account, volume));
};

const describeVolumes: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'VolumeId');
  for (const id of ids) checkVolumeId(id);
  const missing = ids.filter((id) => !account.volumes.find(region, id));
  if (missing.length > 0) {
    throw new Ec2ApiError(
      400,
      'InvalidVolume.NotFound',
      `The volume${missing.length > 1 ? 's' : ''} '${missing.join(', ')}' ${missing.length > 1 ? 'do' : 'does'} not exist.`,
    );
  }
  const volumes = account.volumes
    .all()
    .filter((volume) => volume.region === region && (ids.length === 0 || ids.includes(volume.id)));
  const filtered = applyFilters(volumes, filtersOf(params), (volume, name) => {
    switch (name) {
      case 'volume-id':
        return [volume.id];
      case 'status':
        return [account.volumes.status(volume)];
      case 'availability-zone':
        return [volume.zone];
      case 'size':
        return [String(volume.sizeGiB)];
      case 'volume-type':
        return [volume.volumeType];
      case 'attachment.instance-id':
        return volume.attachment ? [volume.attachment.instanceId] : [];
      case 'attachment.status': {
        const status = account.volumes.attachmentStatus(volume);
        return status ? [status] : [];
      }
      case 'attachment.device':
        return volume.attachment ? [volume.attachment.device] : [];
      default:
        return tagFilterValues(volume.tags, name);
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 500 });
  return ec2Response('DescribeVolumes', {
    volumeSet: page.map((volume) => volumeXml(account, volume)),
    nextToken,
  });
};

const deleteVolume: Ec2Action = (account, region, params) => {
  const volume = volumeOf(account, region, requiredParam(params, 'VolumeId'));
  if (volume.attachment) {
    throw new Ec2ApiError(
      400,
      'VolumeInUse',
      `Volume ${volume.id} is currently attached to ${volume.attachment.instanceId}`,
    );
  }
  account.volumes.delete(volume);
  return ec2Response('DeleteVolume', { return: true });
};

const attachVolume: Ec2Action = (account, region, params) => {
  const volume = volumeOf(account, region, requiredParam(params, 'VolumeId'));
  const instanceId = requiredParam(params, 'InstanceId');
  const device = requiredParam(params, 'Device');
  const instance = account.instances.find(region, instanceId);
  if (!instance) throw instanceNotFound([instanceId]);
  if (!DEVICE_NAME_PATTERN.test(device)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${device}) for parameter device is invalid. ${device} is not a valid EBS device name.`,
    );
  }
  if (volume.attachment) {
    throw new Ec2ApiError(400, 'VolumeInUse', `${volume.id} is already attached to an instance`);
  }
  if (account.volumes.status(volume) !== 'available') {
    throw new Ec2ApiError(400, 'IncorrectState', `${volume.id} is not 'available'.`);
  }
  if (account.instances.state(instance) !== 'running') {
    throw new Ec2ApiError(400, 'IncorrectInstanceState', `Instance '${instance.id}' is not 'running'.`);
  }
  if (volume.zone !== instance.zone) {
    throw new Ec2ApiError(
      400,
      'InvalidVolume.ZoneMismatch',
      `The volume '${volume.id}' is not in the same availability zone as instance '${instance.id}'`,
    );
  }
  const used = [
    ...instance.blockDevices.map((each) => each.deviceName),
    ...account.volumes
      .all()
      .filter((other) => other.attachment?.instanceId === instance.id)
      .map((other) => other.attachment?.device),
  ];
  if (used.includes(device)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Invalid value '${device}' for unixDevice. Attachment point ${device} is already in use`,
    );
  }
  account.volumes.attach(volume, instance, device);
  return ec2Response('AttachVolume', {
    ...attachmentXml(account, volume),
    deleteOnTermination: undefined,
  });
};

const detachVolume: Ec2Action = (account, region, params) => {
  const volume = volumeOf(account, region, requiredParam(params, 'VolumeId'));
  const attachment = volume.attachment;
  const instanceId = params.InstanceId;
  if (!attachment || (instanceId !== undefined && attachment.instanceId !== instanceId)) {
    throw new Ec2ApiError(
      400,
      'IncorrectState',
      `Volume '${volume.id}' is in the '${account.volumes.status(volume)}' state.`,
    );
  }
  if (params.Device !== undefined && params.Device !== attachment.device) {
    throw new Ec2ApiError(
      400,
      'InvalidAttachment.NotFound',
      `The volume '${volume.id}' is not attached to instance '${attachment.instanceId}' as ${params.Device}`,
    );
  }
  // Force or not, the emulated host lets go at once: it has no cache to flush.
  void booleanParam(params, 'Force');
  account.volumes.detach(volume);
  return ec2Response('DetachVolume', {
    ...attachmentXml(account, volume),
    deleteOnTermination: undefined,
  });
};

const createPlacementGroup: Ec2Action = (account, region, params) => {
  const name = requiredParam(params, 'GroupName');
  const strategy = params.Strategy ?? 'cluster';
  if (!PLACEMENT_STRATEGIES.includes(strategy)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${strategy}) for parameter strategy is invalid.`,
    );
  }
  const groups = account.volumes.placementGroups;
  if (groups.some((group) => group.region === region && group.name === name)) {
    throw new Ec2ApiError(
      400,
      'InvalidPlacementGroup.Duplicate',
      `The Placement Group '${name}' already exists.`,
    );
  }
  const group = { name, id: newEc2Id('pg'), region, strategy, tags: resourceTags(params, 'placement-group') };
  groups.push(group);
  return ec2Response('CreatePlacementGroup', {
    return: true,
    placementGroup: {
      groupName: group.name,
      state: 'available',
      strategy: group.strategy,
      groupId: group.id,
      tagSet: tagSet(group.tags),
      groupArn: `arn:aws:ec2:${region}:${account.accountId}:placement-group/${group.name}`,
    },
  });
};

const describePlacementGroups: Ec2Action = (account, region, params) => {
  const names = listValues(params, 'GroupName');
  const ids = listValues(params, 'GroupId');
  const groups = account.volumes.placementGroups.filter((group) => group.region === region);
  for (const name of names) {
    if (!groups.some((group) => group.name === name)) {
      throw new Ec2ApiError(
        400,
        'InvalidPlacementGroup.Unknown',
        `The Placement Group '${name}' is unknown.`,
      );
    }
  }
  const selected = groups.filter(
    (group) =>
      (names.length === 0 || names.includes(group.name)) && (ids.length === 0 || ids.includes(group.id)),
  );
  const filtered = applyFilters(selected, filtersOf(params), (group, name) => {
    switch (name) {
      case 'group-name':
        return [group.name];
      case 'group-id':
        return [group.id];
      case 'strategy':
        return [group.strategy];
      case 'state':
        return ['available'];
      default:
        return tagFilterValues(group.tags, name);
    }
  });
  return ec2Response('DescribePlacementGroups', {
    placementGroupSet: filtered.map((group) => ({
      groupName: group.name,
      state: 'available',
      strategy: group.strategy,
      groupId: group.id,
      tagSet: tagSet(group.tags),
    })),
  });
};

const deletePlacementGroup: Ec2Action = (account, region, params) => {
  const name = requiredParam(params, 'GroupName');
  const groups = account.volumes.placementGroups;
  const index = groups.findIndex((group) => group.region === region && group.name === name);
  if (index === -1) {
    throw new Ec2ApiError(400, 'InvalidPlacementGroup.Unknown', `The Placement Group '${name}' is unknown.`);
  }
  const inUse = account.instances.all().some((instance) => {
    if (instance.region !== region || instance.placementGroup !== name) return false;
    return account.instances.state(instance) !== 'terminated';
  });
  if (inUse) {
    throw new Ec2ApiError(
      400,
      'InvalidPlacementGroup.InUse',
      `The placement group '${name}' is in use and may not be deleted.`,
    );
  }
  groups.splice(index, 1);
  return ec2Response('DeletePlacementGroup', { return: true });
};

export const EC2_VOLUME_ACTIONS: Readonly<Record<string, Ec2Action>> = {
  CreateVolume: createVolume,
  DescribeVolumes: describeVolumes,
  DeleteVolume: deleteVolume,
  AttachVolume: attachVolume,
  DetachVolume: detachVolume,
  CreatePlacementGroup: createPlacementGroup,
  DescribePlacementGroups: describePlacementGroups,
  DeletePlacementGroup: deletePlacementGroup,
};
