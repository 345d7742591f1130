/**
 * The `instances.insert` body dstack sends (`gcp/resources.py`): the machine type in the zone,
 * a boot disk from dstack's image, N1's GPUs as `guestAccelerators`, spot scheduling, the network
 * with or without an external IP, the VM bootstrap as `user-data` (cloud-init) and the project
 * key in `ssh-keys`, dstack's labels and the firewall's target tag.
 */
import { createHash } from 'node:crypto';
import {
  buildVmUserData,
  generateUniqueBackendName,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  mergeTags,
} from '@dstack/core';
import { acceleratorTypeOf, takesGuestAccelerators } from './gcp-accelerators.js';
import type { GcpConfig } from './gcp-config.js';

/** The network tag the SSH firewall rule targets. */
export const GCP_INSTANCE_NETWORK_TAG = 'dstack-runner-instance';
/** The SSH user of dstack's images (cloud-init's default user, who gets the project key). */
export const GCP_IMAGE_USER = 'ubuntu';
/**
 * The version of dstack's public VM images (`projects/dstack/global/images/dstack[-cuda]-{v}`):
 * Ubuntu with Docker (and CUDA drivers), as dstack's GCP backend boots.
 */
export const GCP_DSTACK_IMAGE_VERSION = '0.19.40';

/** The image of an instance: dstack's CUDA image for GPU types, its plain image otherwise. */
export function imageFor(hasGpus: boolean): string {
  return `projects/dstack/global/images/dstack${hasGpus ? '-cuda' : ''}-${GCP_DSTACK_IMAGE_VERSION}`;
}

/** The VPC network the backend uses: `vpc_name`, default `default`. */
export function networkName(config: GcpConfig): string {
  return config.vpc_name ?? 'default';
}

/** Lowercase letters, digits and `-`, as instance names and label values must be. */
export function sanitize(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9_-]/g, '-');
}

/**
 * The instance's name, the same for the same `instance_id`: a retried launch looks it up and
 * finds the machine the first one made (names are unique per zone).
 */
export function instanceNameFor(config: InstanceConfiguration): string {
  const name = generateUniqueBackendName(sanitize(config.project_name), sanitize(config.instance_name), {
    seed: config.instance_id,
  });
  return name.replace(/_/g, '-');
}

/** A UUID for `instances.insert`'s `requestId`, one per (launch, zone): a repeated insert answers the first operation. */
export function insertRequestId(instanceId: string, zone: string): string {
  const hex = createHash('sha256').update(`${instanceId}\u0000${zone}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** dstack's labels, then the backend's `tags`, then the run's; values made valid GCP label values. */
export function labelsFor(gcpConfig: GcpConfig, config: InstanceConfiguration): Record<string, string> {
  const labels = mergeTags(
    {
      owner: 'dstack',
      dstack_project: sanitize(config.project_name),
      dstack_name: sanitize(config.instance_name),
      dstack_user: sanitize(config.user),
    },
    gcpConfig.tags,
    config.tags,
  );
  return validLabels(labels);
}

/** Keys and values made valid GCP labels (lowercase, `[a-z0-9_-]`, at most 63 characters). */
export function validLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(labels).map(([key, value]) => [sanitize(key).slice(0, 63), sanitize(value).slice(0, 63)]),
  );
}

export interface InstanceBodyInput {
  readonly gcpConfig: GcpConfig;
  readonly offer: InstanceOfferWithAvailability;
  readonly config: InstanceConfiguration;
  readonly name: string;
  readonly zone: string;
  /** The compact placement policy of the instance's cluster (`projects/P/regions/R/resourcePolicies/N`). */
  readonly resourcePolicy?: string;
}

export function instanceBody({ gcpConfig, offer, config, name, zone, resourcePolicy }: InstanceBodyInput) {
  const { resources } = offer.instance;
  const machineType = offer.instance.name;
  const gpus = resources.gpus;
  const firstGpu = gpus[0];
  const publicIps = gcpConfig.public_ips ?? true;
  const sshKeys = config.ssh_keys.map((key) => `${GCP_IMAGE_USER}:${key.public.trim()}`).join('\n');
  return {
    name,
    machineType: `zones/${zone}/machineTypes/${machineType}`,
    disks: [
      {
        boot: true,
        autoDelete: true,
        initializeParams: {
          sourceImage: imageFor(gpus.length > 0),
          diskSizeGb: String(Math.round(resources.disk.size_mib / 1024)),
          diskType: `zones/${zone}/diskTypes/pd-balanced`,
        },
      },
    ],
    ...(firstGpu && takesGuestAccelerators(machineType)
      ? {
          guestAccelerators: [
            {
              acceleratorType: `projects/${gcpConfig.project_id}/zones/${zone}/acceleratorTypes/${acceleratorTypeOf(firstGpu, machineType)}`,
              acceleratorCount: gpus.length,
            },
          ],
        }
      : {}),
    // Spot as dstack: the model replaces `scheduling` (GCE then defaults onHostMaintenance to TERMINATE).
    scheduling: resources.spot
      ? { provisioningModel: 'SPOT', instanceTerminationAction: 'STOP' }
      : { onHostMaintenance: gpus.length > 0 ? 'TERMINATE' : 'MIGRATE' },
    networkInterfaces: [
      {
        network: `projects/${gcpConfig.project_id}/global/networks/${networkName(gcpConfig)}`,
        accessConfigs: publicIps
          ? [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT', networkTier: 'PREMIUM' }]
          : [],
      },
    ],
    metadata: {
      items: [
        { key: 'user-data', value: buildVmUserData(config) },
        ...(sshKeys ? [{ key: 'ssh-keys', value: sshKeys }] : []),
      ],
    },
    labels: labelsFor(gcpConfig, config),
    tags: { items: [GCP_INSTANCE_NETWORK_TAG] },
    ...(resourcePolicy ? { resourcePolicies: [resourcePolicy] } : {}),
    ...(gcpConfig.vm_service_account
      ? {
          serviceAccounts: [
            {
              email: gcpConfig.vm_service_account,
              scopes: ['https://www.googleapis.com/auth/cloud-platform'],
            },
          ],
        }
      : {}),
  };
}
