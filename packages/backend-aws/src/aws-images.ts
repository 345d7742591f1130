/**
 * The AMI an instance boots and its SSH user: the config's `os_images` when set, else dstack's
 * choice — the Deep Learning Base AMI (NVIDIA driver, Docker) for GPU types and dstack's own
 * `dstack-{version}` image (Ubuntu with Docker) otherwise, both with cloud-init's default user
 * `ubuntu`. Jobs run in containers, so the image must have Docker: Canonical's plain Ubuntu has
 * none. The newest `available` image wins.
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
/** The version of dstack's public VM images, as dstack's AWS backend boots them. */
export const AWS_DSTACK_IMAGE_VERSION = '0.19.40';
export const DSTACK_CPU_IMAGE: AwsImageChoice = {
  name: `dstack-${AWS_DSTACK_IMAGE_VERSION}`,
  owner: '142421590066',
  user: 'ubuntu',
};

/** The image to look up for an instance with or without GPUs. */
export function imageChoiceFor(config: Pick<AwsConfig, 'os_images'>, hasGpu: boolean): AwsImageChoice {
  const custom = hasGpu ? config.os_images?.nvidia : config.os_images?.cpu;
  if (custom) return { name: custom.name, owner: custom.owner ?? 'self', user: custom.user };
  return hasGpu ? DLAMI_IMAGE : DSTACK_CPU_IMAGE;
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
