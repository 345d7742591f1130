/**
 * EBS volumes and cluster placement groups, as dstack's AWS backend makes them: gp3 volumes
 * tagged as dstack's resources, attached as the first free `/dev/sd[f-p]` of the instance, and
 * one cluster placement group per cluster fleet (no burstable `t2`/`t3` types in it).
 */
import {
  AttachVolumeCommand,
  CreatePlacementGroupCommand,
  CreateVolumeCommand,
  DeletePlacementGroupCommand,
  DeleteVolumeCommand,
  DescribeInstancesCommand,
  DescribeVolumesCommand,
  DetachVolumeCommand,
  type EC2Client,
  type Volume as Ec2Volume,
} from '@aws-sdk/client-ec2';
import {
  BackendError,
  generateUniqueBackendName,
  type InstanceOffer,
  type JobProvisioningData,
  mergeTags,
  type PlacementGroup,
  PlacementGroupNotSupportedError,
  type PlacementGroupProvisioningData,
  type Volume,
  type VolumeAttachmentData,
  type VolumeProvisioningData,
} from '@dstack/core';
import { awsErrorCode } from './aws-clients.js';
import { AWS_BACKEND_TYPE } from './aws-config.js';

/** What `backend_data` of a volume's provisioning data holds (dstack's `AWSVolumeBackendData`). */
export interface AwsVolumeBackendData {
  readonly volume_type: string;
  readonly iops: number;
}

/** The device names dstack attaches EBS volumes as: /dev/sdf … /dev/sdp. */
export const EBS_DEVICE_NAMES: readonly string[] = [...'fghijklmnop'].map((letter) => `/dev/sd${letter}`);

/** How long `attachVolume` waits for the attachment to be `attached` (the device on the instance). */
const ATTACH_WAIT_MS = 120_000;
const ATTACH_POLL_MS = 500;

/** USD per month (dstack's `_get_volume_price`: gp3 at $0.08/GB and $0.005 per IOPS over 3000). */
export function ebsVolumePrice(sizeGiB: number, iops: number): number {
  return sizeGiB * 0.08 + Math.max(0, iops - 3000) * 0.005;
}

/** Whether an instance type can be in a placement group of this strategy (not burstable ones in a cluster). */
export function offerSupportsPlacementGroup(offer: InstanceOffer, group: PlacementGroup): boolean {
  if (group.configuration.placement_strategy !== 'cluster') return true;
  return !['t2.', 't3.'].some((family) => offer.instance.name.startsWith(family));
}

export async function createPlacementGroup(
  ec2: EC2Client,
  group: PlacementGroup,
  masterOffer: InstanceOffer,
): Promise<PlacementGroupProvisioningData> {
  if (!offerSupportsPlacementGroup(masterOffer, group)) {
    throw new PlacementGroupNotSupportedError(
      `${masterOffer.instance.name} cannot be in a ${group.configuration.placement_strategy} placement group`,
    );
  }
  try {
    await ec2.send(
      new CreatePlacementGroupCommand({
        GroupName: group.name,
        Strategy: group.configuration.placement_strategy,
      }),
    );
  } catch (error) {
    // A repeated call (the server died before storing the answer) finds its group made.
    if (awsErrorCode(error) !== 'InvalidPlacementGroup.Duplicate') throw error;
  }
  return { backend: AWS_BACKEND_TYPE, backend_data: null };
}

/** Deletes the group; a missing one is deleted already. `InvalidPlacementGroup.InUse` is thrown (tried again later). */
export async function deletePlacementGroup(ec2: EC2Client, group: PlacementGroup): Promise<void> {
  try {
    await ec2.send(new DeletePlacementGroupCommand({ GroupName: group.name }));
  } catch (error) {
    const code = awsErrorCode(error);
    if (code === 'InvalidPlacementGroup.Unknown') return;
    if (code === 'InvalidPlacementGroup.InUse') {
      throw new BackendError(`Placement group ${group.name} is in use`, { cause: error });
    }
    throw error;
  }
}

function provisioningDataOf(volume: Ec2Volume, price: number | null): VolumeProvisioningData {
  const backendData: AwsVolumeBackendData = {
    volume_type: volume.VolumeType ?? 'gp3',
    iops: volume.Iops ?? 0,
  };
  return {
    backend: AWS_BACKEND_TYPE,
    volume_id: volume.VolumeId as string,
    size_gb: volume.Size ?? 0,
    availability_zone: volume.AvailabilityZone ?? null,
    price,
    attachable: true,
    detachable: true,
    backend_data: JSON.stringify(backendData),
  };
}

function notFound(volumeId: string, region: string): string {
  return `volume_id ${JSON.stringify(volumeId)}: no such EBS volume in ${region}`;
}

export async function registerVolume(ec2: EC2Client, volume: Volume): Promise<VolumeProvisioningData> {
  const volumeId = volume.configuration.volume_id ?? '';
  let found: Ec2Volume | undefined;
  try {
    found = (await ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeId] }))).Volumes?.[0];
  } catch (error) {
    const code = awsErrorCode(error);
    // EC2 answers a malformed id (`vol1235`) with InvalidVolumeID.Malformed; older answers were
    // InvalidParameterValue (the one dstack checks). Either is the user's `volume_id`, not the cloud.
    if (code === 'InvalidParameterValue' || code === 'InvalidVolumeID.Malformed') {
      throw new BackendError(
        `volume_id ${JSON.stringify(volumeId)} is not an EBS volume id (vol- and hex digits): ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (code === 'InvalidVolume.NotFound') {
      throw new BackendError(notFound(volumeId, volume.configuration.region), { cause: error });
    }
    throw error;
  }
  if (!found) throw new BackendError(notFound(volumeId, volume.configuration.region));
  return provisioningDataOf(found, null);
}

/**
 * A gp3 volume of `size` GB in the configured zone (else the region's first), tagged as dstack's.
 * `ClientToken` = dstack's volume id: a repeated call answers the volume the first one made.
 */
export async function createVolume(
  ec2: EC2Client,
  volume: Volume,
  zonesOfRegion: readonly string[],
  backendTags: Record<string, string> | null | undefined,
): Promise<VolumeProvisioningData> {
  const { configuration } = volume;
  const zone = configuration.availability_zone
    ? zonesOfRegion.find((each) => each === configuration.availability_zone)
    : zonesOfRegion[0];
  if (!zone) {
    throw new BackendError(
      `Failed to find availability zone ${configuration.availability_zone ?? ''} in region ${configuration.region}`.replace(
        '  ',
        ' ',
      ),
    );
  }
  if (configuration.size == null)
    throw new BackendError(`volume ${volume.name}: size is required to create it`);
  const tags = mergeTags(
    {
      Name: generateUniqueBackendName(volume.project_name, volume.name, { seed: volume.id }),
      owner: 'dstack',
      dstack_project: volume.project_name,
      dstack_name: volume.name,
      dstack_user: volume.user,
    },
    backendTags,
    configuration.tags,
  );
  const created = await ec2.send(
    new CreateVolumeCommand({
      Size: Math.ceil(configuration.size),
      AvailabilityZone: zone,
      VolumeType: 'gp3',
      ClientToken: volume.id,
      TagSpecifications: [
        { ResourceType: 'volume', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
      ],
    }),
  );
  return provisioningDataOf(created, ebsVolumePrice(created.Size ?? 0, created.Iops ?? 0));
}

export async function deleteVolume(ec2: EC2Client, volume: Volume): Promise<void> {
  const volumeId = volume.provisioning_data?.volume_id ?? volume.configuration.volume_id;
  if (!volumeId) return;
  try {
    await ec2.send(new DeleteVolumeCommand({ VolumeId: volumeId }));
  } catch (error) {
    if (awsErrorCode(error) === 'InvalidVolume.NotFound') return;
    throw error;
  }
}

function volumeIdOf(volume: Volume): string {
  const volumeId = volume.provisioning_data?.volume_id;
  if (!volumeId) throw new BackendError(`volume ${volume.name} has no EBS volume yet`);
  return volumeId;
}

/**
 * Attaches the volume as the first device name the instance does not use (one the list missed
 * is skipped, as dstack does), then waits until EC2 says `attached`: the device is on the
 * instance when the job's task starts.
 */
export async function attachVolume(
  ec2: EC2Client,
  volume: Volume,
  provisioningData: JobProvisioningData,
): Promise<VolumeAttachmentData> {
  const volumeId = volumeIdOf(volume);
  const instanceId = provisioningData.instance_id;
  const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  const used = new Set(
    (described.Reservations?.[0]?.Instances?.[0]?.BlockDeviceMappings ?? []).map((each) => each.DeviceName),
  );
  for (const deviceName of EBS_DEVICE_NAMES.filter((name) => !used.has(name))) {
    try {
      await ec2.send(
        new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: instanceId, Device: deviceName }),
      );
    } catch (error) {
      const code = awsErrorCode(error);
      const message = error instanceof Error ? error.message : '';
      if (code === 'VolumeInUse') throw new BackendError(`Failed to attach volume in use: ${volumeId}`);
      if (code === 'InvalidVolume.ZoneMismatch') {
        throw new BackendError('Volume zone is different from instance zone');
      }
      if (code === 'InvalidVolume.NotFound') throw new BackendError('Volume not found');
      // The name is taken but the instance's list did not show it yet.
      if (
        code === 'InvalidParameterValue' &&
        message.includes(`Invalid value '${deviceName}' for unixDevice`)
      ) {
        continue;
      }
      throw error;
    }
    await waitForAttachment(ec2, volumeId, instanceId);
    return { device_name: deviceName };
  }
  throw new BackendError(`Failed to find available device name for volume ${volume.name}`);
}

async function waitForAttachment(ec2: EC2Client, volumeId: string, instanceId: string): Promise<void> {
  const deadline = Date.now() + ATTACH_WAIT_MS;
  for (;;) {
    const volume = (await ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeId] }))).Volumes?.[0];
    const attachment = volume?.Attachments?.find((each) => each.InstanceId === instanceId);
    if (attachment?.State === 'attached') return;
    if (!attachment || Date.now() > deadline) {
      throw new BackendError(
        `EBS volume ${volumeId} did not become attached to ${instanceId} (${attachment?.State ?? 'not attached'})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, ATTACH_POLL_MS));
  }
}

export async function detachVolume(
  ec2: EC2Client,
  volume: Volume,
  provisioningData: JobProvisioningData,
  force: boolean,
): Promise<void> {
  const volumeId = volumeIdOf(volume);
  const instanceId = provisioningData.instance_id;
  const attachment = volume.attachments?.find((each) => each.instance.instance_id === instanceId);
  try {
    await ec2.send(
      new DetachVolumeCommand({
        VolumeId: volumeId,
        InstanceId: instanceId,
        Device: attachment?.attachment_data?.device_name ?? undefined,
        Force: force,
      }),
    );
  } catch (error) {
    // Detached already.
    if (awsErrorCode(error) === 'IncorrectState' || awsErrorCode(error) === 'InvalidVolume.NotFound') return;
    throw error;
  }
}

/** Whether the instance no longer holds the volume (dstack's `is_volume_detached`). */
export async function isVolumeDetached(
  ec2: EC2Client,
  volume: Volume,
  provisioningData: JobProvisioningData,
): Promise<boolean> {
  let found: Ec2Volume | undefined;
  try {
    found = (await ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeIdOf(volume)] }))).Volumes?.[0];
  } catch (error) {
    if (awsErrorCode(error) === 'InvalidVolume.NotFound') return true;
    throw error;
  }
  const attachment = found?.Attachments?.find((each) => each.InstanceId === provisioningData.instance_id);
  return attachment === undefined || attachment.State === 'detached';
}
