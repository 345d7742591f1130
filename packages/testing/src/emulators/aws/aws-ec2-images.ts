/**
 * The AMIs of the emulated account: the images dstack's AWS backend looks up by name (the
 * Deep Learning Base AMI for GPU instances from Amazon's account, `dstack-*` images from dstack's
 * account) and Canonical's Ubuntu, each in every region with a region-specific id.
 */
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { stableId } from './aws-ec2-network.js';

export interface Ec2Image {
  readonly id: string;
  readonly region: string;
  readonly name: string;
  readonly ownerId: string;
  /** `amazon` for Amazon's images, else undefined. */
  readonly ownerAlias: string | undefined;
  readonly creationDate: string;
  readonly architecture: 'x86_64' | 'arm64';
  readonly state: 'available';
  readonly description: string;
  /**
   * What the hosts booted from it have: Docker with dstack's images pre-pulled (dstack's images,
   * made by its Packer build), Docker alone (the DLAMI) or no Docker (Canonical's Ubuntu).
   */
  readonly hostKind: EmulatedHostKind;
}

/** An image every region has; the emulator gives it a region-specific id. */
export interface Ec2ImageTemplate {
  readonly name: string;
  readonly ownerId: string;
  readonly ownerAlias?: string;
  readonly creationDate: string;
  readonly architecture?: 'x86_64' | 'arm64';
  readonly description?: string;
  /** Default: `plain` for Canonical's images, `dstack` for dstack's, `docker` for the others. */
  readonly hostKind?: EmulatedHostKind;
}

/** Amazon's account (DLAMI), dstack's account and Canonical's account, as AWS names them. */
export const AMAZON_DLAMI_OWNER = '898082745236';
export const DSTACK_IMAGES_OWNER = '142421590066';
export const CANONICAL_OWNER = '099720109477';

export const DEFAULT_EC2_IMAGES: readonly Ec2ImageTemplate[] = [
  {
    name: 'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20250602',
    ownerId: AMAZON_DLAMI_OWNER,
    ownerAlias: 'amazon',
    creationDate: '2025-06-03T10:21:45.000Z',
    description: 'Supported EC2 instances: G4dn, G5, G6, Gr6, G6e, P4, P4de, P5, P5e, P5en, P6-B200.',
  },
  {
    name: 'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20250516',
    ownerId: AMAZON_DLAMI_OWNER,
    ownerAlias: 'amazon',
    creationDate: '2025-05-17T08:02:11.000Z',
    description: 'Supported EC2 instances: G4dn, G5, G6, Gr6, G6e, P4, P4de, P5, P5e, P5en.',
  },
  { name: 'dstack-0.19.40', ownerId: DSTACK_IMAGES_OWNER, creationDate: '2025-11-20T12:00:00.000Z' },
  { name: 'dstack-cuda-0.19.40', ownerId: DSTACK_IMAGES_OWNER, creationDate: '2025-11-20T12:05:00.000Z' },
  {
    name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250516',
    ownerId: CANONICAL_OWNER,
    creationDate: '2025-05-16T05:31:02.000Z',
  },
  {
    name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250516',
    ownerId: CANONICAL_OWNER,
    creationDate: '2025-05-16T06:12:40.000Z',
  },
];

export function imagesFor(regions: readonly string[], templates: readonly Ec2ImageTemplate[]): Ec2Image[] {
  return regions.flatMap((region) =>
    templates.map((template) => ({
      id: stableId('ami', region, template.ownerId, template.name),
      region,
      name: template.name,
      ownerId: template.ownerId,
      ownerAlias: template.ownerAlias,
      creationDate: template.creationDate,
      architecture: template.architecture ?? 'x86_64',
      state: 'available' as const,
      description: template.description ?? template.name,
      hostKind: template.hostKind ?? defaultHostKind(template.ownerId),
    })),
  );
}

function defaultHostKind(ownerId: string): EmulatedHostKind {
  if (ownerId === CANONICAL_OWNER) return 'plain';
  return ownerId === DSTACK_IMAGES_OWNER ? 'dstack' : 'docker';
}
