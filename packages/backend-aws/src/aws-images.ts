/**
 * The AMI an instance boots and its SSH user: the config's `os_images` when set, else dstack's
 * choice — the Deep Learning Base AMI (NVIDIA driver) for GPU types and Canonical's Ubuntu 22.04
 * otherwise, both with cloud-init's default user `ubuntu`. The newest `available` image wins.
 */
import { DescribeImagesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import { BackendError } from '@dstack/core';
import type { AwsConfig } from './aws-config.js';

export interface AwsImageChoice {
  readonly name: string;
  readonly owner: string;
  readonly user: string;
}

export const DLAMI_IMAGE: AwsImageChoice = {
  name: 'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *',
  owner: '898082745236',
  user: 'ubuntu',
};
export const UBUNTU_IMAGE: AwsImageChoice = {
  name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*',
  owner: '099720109477',
  user: 'ubuntu',
};

/** The image to look up for an instance with or without GPUs. */
export function imageChoiceFor(config: Pick<AwsConfig, 'os_images'>, hasGpu: boolean): AwsImageChoice {
  const custom = hasGpu ? config.os_images?.nvidia : config.os_images?.cpu;
  if (custom) return { name: custom.name, owner: custom.owner ?? 'self', user: custom.user };
  return hasGpu ? DLAMI_IMAGE : UBUNTU_IMAGE;
}

/** The id of the newest available image matching the choice in the client's region. */
export async function findImageId(ec2: EC2Client, choice: AwsImageChoice, region: string): Promise<string> {
  const answer = await ec2.send(
    new DescribeImagesCommand({
      Owners: [choice.owner],
      Filters: [
        { Name: 'name', Values: [choice.name] },
        { Name: 'state', Values: ['available'] },
      ],
    }),
  );
  const newest = (answer.Images ?? [])
    .filter((image) => image.ImageId && (image.State === undefined || image.State === 'available'))
    .sort((a, b) => (b.CreationDate ?? '').localeCompare(a.CreationDate ?? ''))[0];
  if (!newest?.ImageId) {
    throw new BackendError(
      `No available AMI named ${JSON.stringify(choice.name)} (owner ${choice.owner}) in ${region}`,
    );
  }
  return newest.ImageId;
}
