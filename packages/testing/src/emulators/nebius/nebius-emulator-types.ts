/**
 * The Nebius emulator's public shapes: its options and timeline, the service account key it
 * makes, the state it shows on `GET /_emulator/state`, and the handle tests hold.
 */
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { NebiusPlatformSpec, NebiusProjectSpec } from './nebius-emulator-data.js';
import type { ActiveNebiusFault, NebiusFault } from './nebius-emulator-faults.js';

export interface NebiusEmulatorTimeline {
  /** A disk's create Operation is done (disk READY) after this. Default 100. */
  diskMs: number;
  /** CREATING → STARTING after this. Default 100. */
  creatingMs: number;
  /** STARTING → RUNNING after this more (with hosts, also not before the host is up). Default 200. */
  startingMs: number;
  /** DELETING → gone after this. Default 200. */
  deletingMs: number;
  /** A preempted instance's STOPPING → STOPPED after this. Default 200. */
  stoppingMs: number;
}

export const DEFAULT_NEBIUS_EMULATOR_TIMELINE: NebiusEmulatorTimeline = {
  diskMs: 100,
  creatingMs: 100,
  startingMs: 200,
  deletingMs: 200,
  stoppingMs: 200,
};

export interface NebiusServiceAccountKey {
  serviceAccountId: string;
  publicKeyId: string;
  /** PEM (PKCS#8): what the backend's `private_key_content` is. */
  privateKey: string;
}

export interface NebiusEmulatorOptions {
  host?: string;
  port?: number;
  projects?: readonly NebiusProjectSpec[];
  platforms?: readonly NebiusPlatformSpec[];
  /** InfiniBand fabrics by platform and region. Default `DEFAULT_NEBIUS_FABRICS`. */
  fabrics?: ReadonlyArray<{ name: string; platform: string; region: string }>;
  hosts?: EmulatedHosts;
  timeline?: Partial<NebiusEmulatorTimeline>;
  faults?: readonly NebiusFault[];
  /** IAM tokens' lifetime in seconds. Default 43200 (Nebius's 12 hours). */
  tokenLifetimeSeconds?: number;
}

export type InstanceState =
  | 'CREATING'
  | 'STARTING'
  | 'RUNNING'
  | 'STOPPING'
  | 'STOPPED'
  | 'DELETING'
  | 'ERROR';

export interface NebiusEmulatorState {
  readonly provider: 'nebius';
  readonly instances: readonly {
    id: string;
    name: string;
    state: InstanceState;
    region: string;
    platform: string;
    preset: string;
    preemptible: boolean;
    bootDiskId: string;
    labels: Record<string, string>;
    gpuClusterId: string | null;
  }[];
  readonly disks: readonly { id: string; name: string; attachedTo: string | null }[];
  readonly gpuClusters: readonly { id: string; name: string; fabric: string; instances: string[] }[];
}

export interface NebiusEmulator extends BackendEmulator {
  /** The HTTP control server beside the API: `GET /_emulator/state`, `/_emulator/faults`. */
  readonly url: string;
  /** The gRPC API, `http://127.0.0.1:<port>` (plaintext): a backend's `endpoint_url`. */
  readonly apiUrl: string;
  readonly serviceAccount: NebiusServiceAccountKey;
  readonly regions: readonly string[];
  addFault(fault: NebiusFault): ActiveNebiusFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveNebiusFault[];
  failNextLaunchWithNoCapacity(count?: number): void;
  removeInstance(instanceId: string): Promise<void>;
  /**
   * Preempts a preemptible instance now, as Compute does to reclaim its capacity: it stops
   * (STOPPING → STOPPED), its host goes, and it stays until deleted. Throws for a regular instance
   * or one not STARTING or RUNNING. Also `POST /_emulator/instances/:id/preempt`.
   */
  preemptInstance(instanceId: string): void;
  launchedMachineCount(): number;
  state(): NebiusEmulatorState;
  close(): Promise<void>;
}
