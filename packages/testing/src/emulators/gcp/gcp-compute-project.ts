/**
 * The emulated project's Compute state that every route reads (instances, disks, policies,
 * faults, quotas, firewalls, operations) and the images it can boot from.
 */
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import type { GcpDisks } from './gcp-compute-disks.js';
import type { GcpInstances, GcpOperation } from './gcp-compute-instances.js';
import type { GcpEmulatorData } from './gcp-emulator-data.js';
import type { GcpEmulatorFaults } from './gcp-emulator-faults.js';
import type { GcpReservations } from './gcp-reservations.js';
import type { GcpResourcePolicies } from './gcp-resource-policies.js';

export interface GcpImage {
  /** The project that owns it, e.g. `dstack`, `ubuntu-os-cloud`. */
  readonly project: string;
  readonly name: string;
  readonly family?: string;
  readonly creationTimestamp: string;
  readonly diskSizeGb?: number;
  /**
   * What the hosts booted from it have. Default: Docker with dstack's images pre-pulled for
   * dstack's images (its Packer build pulls them), no Docker for the others.
   */
  readonly hostKind?: EmulatedHostKind;
}

export function hostKindOf(image: GcpImage): EmulatedHostKind {
  return image.hostKind ?? (image.project === 'dstack' ? 'dstack' : 'plain');
}

/** dstack's images (`projects/dstack/global/images/dstack[-cuda]-{version}`) and Ubuntu's. */
export const DEFAULT_GCP_IMAGES: readonly GcpImage[] = [
  { project: 'dstack', name: 'dstack-0.19.40', creationTimestamp: '2025-11-20T04:00:00.000-08:00' },
  { project: 'dstack', name: 'dstack-cuda-0.19.40', creationTimestamp: '2025-11-20T04:05:00.000-08:00' },
  {
    project: 'ubuntu-os-cloud',
    name: 'ubuntu-2204-jammy-v20250516',
    family: 'ubuntu-2204-lts',
    creationTimestamp: '2025-05-16T00:00:00.000-07:00',
  },
];

/** The limit of every quota a test does not set: enough not to matter. */
export const DEFAULT_GCP_QUOTA_LIMIT = 64;

export interface GcpComputeProject {
  readonly project: string;
  readonly data: GcpEmulatorData;
  readonly instances: GcpInstances;
  readonly disks: GcpDisks;
  readonly resourcePolicies: GcpResourcePolicies;
  readonly reservations: GcpReservations;
  readonly faults: GcpEmulatorFaults;
  readonly images: readonly GcpImage[];
  /** Limits by metric (e.g. `{NVIDIA_T4_GPUS: 0}`) in every region; others `DEFAULT_GCP_QUOTA_LIMIT` (CPUS 1000). */
  readonly quotas: Readonly<Record<string, number>>;
  readonly clock: () => number;
  readonly firewalls: Map<string, Record<string, unknown>>;
  /** Insert operations by `requestId` (retries of one insert answer the same operation). */
  readonly requestIds: Map<string, GcpOperation>;
  /** Global operations (firewall inserts), DONE from the start. */
  readonly globalOperations: Map<string, Record<string, unknown>>;
}
