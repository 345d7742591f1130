import { describe, expect, it } from 'vitest';
import { DEFAULT_EC2_IMAGES, imagesFor } from './aws-ec2-images.js';

describe('the emulated AMIs', () => {
  it("boot hosts with Docker and dstack's images pre-pulled from dstack's images, with Docker from the DLAMI, without from Canonical's Ubuntu", () => {
    const kinds = Object.fromEntries(
      imagesFor(['us-east-1'], DEFAULT_EC2_IMAGES).map((image) => [image.name, image.hostKind]),
    );
    expect(kinds).toEqual({
      'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20250602': 'docker',
      'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20250516': 'docker',
      'dstack-0.19.40': 'dstack',
      'dstack-cuda-0.19.40': 'dstack',
      'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250516': 'plain',
      'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250516': 'plain',
    });
  });
});
