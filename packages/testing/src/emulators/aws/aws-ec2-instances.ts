/**
 * The instances of the emulated account and their timeline. A state is worked out from the clock
 * whenever someone looks (pending until `pendingMs` passed and the host is up, shutting-down for
 * `shuttingDownMs` after termination, then terminated, then gone after `terminatedVisibleMs`), so
 * a test with a manual clock sees every step deterministically.
 */
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import type { Subnet } from './aws-ec2-network.js';
import type { AwsMarket } from './aws-vcpu-quotas.js';

/** How long each step of an instance's life takes, in ms of the emulator's clock. */
export interface AwsEmulatorTimeline {
  /** After launch, DescribeInstances answers InvalidInstanceID.NotFound for the new id this long (EC2's eventual consistency). Default 500. */
  notFoundWindowMs: number;
  /** pending → running (with hosts, also not before the host is up). Default 1000. */
  pendingMs: number;
  /** shutting-down → terminated. Default 1000. */
  shuttingDownMs: number;
  /** A terminated instance stays visible this long, then is unknown (NotFound). Default one hour, as EC2. */
  terminatedVisibleMs: number;
}

export const DEFAULT_AWS_EMULATOR_TIMELINE: Readonly<AwsEmulatorTimeline> = {
  notFoundWindowMs: 500,
  pendingMs: 1000,
  shuttingDownMs: 1000,
  terminatedVisibleMs: 60 * 60 * 1000,
};

export type Ec2InstanceStateName = 'pending' | 'running' | 'shutting-down' | 'terminated';

export const EC2_STATE_CODES: Readonly<Record<Ec2InstanceStateName, number>> = {
  pending: 0,
  running: 16,
  'shutting-down': 32,
  terminated: 48,
};

export interface StateReason {
  readonly code: string;
  readonly message: string;
}

export interface BlockDevice {
  readonly deviceName: string;
  readonly volumeId: string;
  readonly sizeGiB: number;
  readonly volumeType: string;
}

export interface Ec2Instance {
  readonly id: string;
  readonly reservationId: string;
  readonly region: string;
  readonly zone: string;
  readonly subnet: Subnet;
  readonly type: string;
  readonly market: AwsMarket;
  readonly imageId: string;
  /** What the image's hosts have (Docker or not). */
  readonly hostKind: EmulatedHostKind;
  readonly keyName: string | undefined;
  readonly securityGroupIds: readonly string[];
  readonly tags: Map<string, string>;
  readonly userData: string;
  readonly blockDevices: readonly BlockDevice[];
  readonly launchedAt: number;
  readonly launchIndex: number;
  readonly clientToken: string | undefined;
  readonly spotInstanceRequestId: string | undefined;
  readonly iamInstanceProfile: string | undefined;
  /** The placement group it was launched in (`Placement.GroupName`). */
  readonly placementGroup: string | undefined;
  /** `Placement.Tenancy`: `default`, `dedicated` or `host`. */
  readonly tenancy: string;
  /** The Capacity Reservation it runs in (targeted, or an `open` one that fitted). */
  readonly capacityReservationId: string | undefined;
  /** Whether the launch named its reservation (`CapacityReservationTarget`) rather than falling into an open one. */
  readonly capacityReservationTargeted: boolean;
  /** `CapacityReservationPreference` of the launch (`open` unless it said otherwise). */
  readonly capacityReservationPreference: string;
  /** Launched into a Capacity Block (`instanceLifecycle` `capacity-block`). */
  readonly capacityBlock: boolean;
  /** Whether the instance gets a public IP (the subnet's MapPublicIpOnLaunch or AssociatePublicIpAddress). */
  readonly publicIpWanted: boolean;
  /** The addresses it gets without hosts. */
  readonly madeUpPrivateIp: string;
  readonly madeUpPublicIp: string;
  /** SlowPublicIp: the public IP appears this long after the instance is running. */
  readonly publicIpDelayMs: number;
  /** SpotInterruption: taken back this long after it started running. */
  readonly interruptAfterRunningMs: number | undefined;
  /** The instance's host, with hosts (its termination waits for its launch). */
  host: EmulatedInstanceHost | undefined;
  /** When the host came up, by the emulator's clock: the instance runs no earlier. */
  hostUpAt: number | undefined;
  terminationStartedAt: number | undefined;
  /** Deleted behind the API's back (`forget`): unknown from then on. */
  forgotten: boolean;
  stateReason: StateReason | undefined;
  stateTransitionReason: string;
}

export interface Ec2InstancesOptions {
  readonly clock: () => number;
  readonly timeline: AwsEmulatorTimeline;
  readonly hosts: EmulatedHosts | undefined;
  /** Where failures of the hosts go (a launch that failed, a terminate that threw). */
  readonly onHostError: (instanceId: string, error: unknown) => void;
  /** Called when an instance starts terminating (EC2 detaches its volumes). */
  readonly onTermination?: (instance: Ec2Instance) => void;
}

export type NewInstance = Omit<
  Ec2Instance,
  | 'host'
  | 'hostUpAt'
  | 'terminationStartedAt'
  | 'forgotten'
  | 'stateReason'
  | 'stateTransitionReason'
  | 'launchedAt'
>;

export const SPOT_INTERRUPTION_REASON: StateReason = {
  code: 'Server.SpotInstanceTermination',
  message: 'Server.SpotInstanceTermination: Spot instance termination',
};

const USER_TERMINATION_REASON: StateReason = {
  code: 'Client.UserInitiatedShutdown',
  message: 'Client.UserInitiatedShutdown: User initiated shutdown',
};

/** Never shown (a forgotten instance is unknown to the API); kept for the record. */
const RECLAIMED_REASON: StateReason = {
  code: 'Server.InternalError',
  message: 'Server.InternalError: Instance reclaimed by the provider',
};

const LAUNCH_FAILURE_REASON: StateReason = {
  code: 'Server.InternalError',
  message: 'Server.InternalError: Internal error on launch',
};

export class Ec2Instances {
  readonly #all: Ec2Instance[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #options: Ec2InstancesOptions;

  constructor(options: Ec2InstancesOptions) {
    this.#options = options;
  }

  /** Every instance ever launched, oldest first, including those gone from the API. */
  all(): readonly Ec2Instance[] {
    return this.#all;
  }

  launch(spec: NewInstance): Ec2Instance {
    const instance: Ec2Instance = {
      ...spec,
      launchedAt: this.#options.clock(),
      host: undefined,
      hostUpAt: undefined,
      terminationStartedAt: undefined,
      forgotten: false,
      stateReason: undefined,
      stateTransitionReason: '',
    };
    this.#all.push(instance);
    const hosts = this.#options.hosts;
    if (hosts) {
      // Once the instance is terminating (which stops its host), how the launch ends is no news.
      instance.host = new EmulatedInstanceHost(
        hosts,
        { instanceId: instance.id, userData: instance.userData, kind: instance.hostKind },
        (error) => {
          this.#options.onHostError(instance.id, error);
          this.#startTermination(instance, LAUNCH_FAILURE_REASON);
        },
        () => {
          instance.hostUpAt = this.#options.clock();
          this.#scheduleInterruption(instance);
        },
      );
    } else {
      this.#scheduleInterruption(instance);
    }
    return instance;
  }

  /** The instance with `id` in `region` while the API still knows it. */
  find(region: string, id: string): Ec2Instance | undefined {
    const instance = this.#all.find((each) => each.id === id && each.region === region);
    return instance && this.isKnown(instance) ? instance : undefined;
  }

  /** Whether the API still shows the instance (terminated ones vanish after `terminatedVisibleMs`). */
  isKnown(instance: Ec2Instance): boolean {
    if (instance.forgotten) return false;
    const { terminationStartedAt } = instance;
    if (terminationStartedAt === undefined) return true;
    const { shuttingDownMs, terminatedVisibleMs } = this.#options.timeline;
    return this.#options.clock() < terminationStartedAt + shuttingDownMs + terminatedVisibleMs;
  }

  /** Whether a Describe by id still says NotFound (just launched). */
  inNotFoundWindow(instance: Ec2Instance): boolean {
    return this.#options.clock() < instance.launchedAt + this.#options.timeline.notFoundWindowMs;
  }

  state(instance: Ec2Instance): Ec2InstanceStateName {
    this.#interruptIfDue(instance);
    const now = this.#options.clock();
    if (instance.terminationStartedAt !== undefined) {
      return now < instance.terminationStartedAt + this.#options.timeline.shuttingDownMs
        ? 'shutting-down'
        : 'terminated';
    }
    const runningAt = this.#runningAt(instance);
    return runningAt !== undefined && now >= runningAt ? 'running' : 'pending';
  }

  privateIp(instance: Ec2Instance): string | undefined {
    if (this.state(instance) === 'terminated') return undefined;
    return this.#options.hosts ? instance.host?.address : instance.madeUpPrivateIp;
  }

  /** The public IP: only while running, and only once a SlowPublicIp delay has passed. */
  publicIp(instance: Ec2Instance): string | undefined {
    if (!instance.publicIpWanted || this.state(instance) !== 'running') return undefined;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined || this.#options.clock() < runningAt + instance.publicIpDelayMs)
      return undefined;
    return instance.host?.address ?? instance.madeUpPublicIp;
  }

  /** Terminates (idempotent); answers the state before and after, as TerminateInstances does. */
  terminate(instance: Ec2Instance): { previous: Ec2InstanceStateName; current: Ec2InstanceStateName } {
    const previous = this.state(instance);
    if (instance.terminationStartedAt === undefined)
      this.#startTermination(instance, USER_TERMINATION_REASON);
    return { previous, current: this.state(instance) };
  }

  /** Removes the instance as if the provider had reclaimed it long ago: its host stops, the API no longer knows it. */
  forget(instance: Ec2Instance): void {
    if (instance.terminationStartedAt === undefined) this.#startTermination(instance, RECLAIMED_REASON);
    instance.forgotten = true;
  }

  /** Takes a running spot instance back, as EC2 does when it needs the capacity. */
  interruptSpot(instance: Ec2Instance): void {
    if (instance.market !== 'spot') throw new Error(`${instance.id} is not a spot instance`);
    const state = this.state(instance);
    if (state !== 'running' && state !== 'pending') {
      throw new Error(
        `${instance.id} is ${state}; only a pending or running spot instance can be interrupted`,
      );
    }
    this.#startTermination(instance, SPOT_INTERRUPTION_REASON);
  }

  /** Pending and running instances in the Capacity Reservation `reservationId`. */
  liveInReservation(reservationId: string): number {
    return this.#all.filter((each) => {
      if (each.capacityReservationId !== reservationId) return false;
      const state = this.state(each);
      return state === 'pending' || state === 'running';
    }).length;
  }

  /** vCPUs of pending and running instances in `region` that `counts` selects (for quotas). */
  usedVcpus(region: string, counts: (instance: Ec2Instance) => number): number {
    return this.#all
      .filter((each) => each.region === region)
      .filter((each) => {
        const state = this.state(each);
        return state === 'pending' || state === 'running';
      })
      .reduce((total, each) => total + counts(each), 0);
  }

  /** Stops the timers of scheduled interruptions (the emulator's shutdown). */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /** When the instance is (or will be) running: after `pendingMs`, and with hosts not before its host is up. */
  #runningAt(instance: Ec2Instance): number | undefined {
    const afterPending = instance.launchedAt + this.#options.timeline.pendingMs;
    if (!this.#options.hosts) return afterPending;
    return instance.hostUpAt === undefined ? undefined : Math.max(afterPending, instance.hostUpAt);
  }

  #startTermination(instance: Ec2Instance, reason: StateReason): void {
    const now = this.#options.clock();
    instance.terminationStartedAt = now;
    instance.stateReason = reason;
    instance.stateTransitionReason =
      reason === USER_TERMINATION_REASON
        ? `User initiated (${new Date(now).toISOString().slice(0, 19).replace('T', ' ')} GMT)`
        : 'Service initiated';
    this.#options.onTermination?.(instance);
    // A host still booting is terminated once its launch settles: never leave one behind.
    void instance.host?.stop().catch((error: unknown) => this.#options.onHostError(instance.id, error));
  }

  /** A SpotInterruption fault takes the instance back `interruptAfterRunningMs` after it started running. */
  #interruptIfDue(instance: Ec2Instance): void {
    if (instance.interruptAfterRunningMs === undefined || instance.terminationStartedAt !== undefined) return;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined) return;
    const due = runningAt + instance.interruptAfterRunningMs;
    if (this.#options.clock() < due) return;
    this.#startTermination(instance, SPOT_INTERRUPTION_REASON);
    instance.terminationStartedAt = due;
  }

  /** Makes a due interruption happen even when nobody looks, so the host dies on time. */
  #scheduleInterruption(instance: Ec2Instance): void {
    if (instance.interruptAfterRunningMs === undefined) return;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined) return;
    const delay = Math.max(0, runningAt + instance.interruptAfterRunningMs - this.#options.clock());
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#interruptIfDue(instance);
    }, delay);
    timer.unref();
    this.#timers.add(timer);
  }
}
