/**
 * The instances and zone operations of the emulated project, with their timeline. A status is
 * worked out from the clock whenever someone looks, so a test with a manual clock sees every step
 * deterministically:
 * - insert: the operation PENDING for `operationPendingMs`, RUNNING, then DONE once the instance
 *   leaves PROVISIONING; the instance PROVISIONING → STAGING → RUNNING (with hosts, not before its
 *   host is up). A failing insert (capacity, quota) keeps the instance PROVISIONING and the
 *   operation RUNNING until it fails, then the operation is DONE with `error` and the instance 404s.
 * - delete: STOPPING for `stoppingMs`, TERMINATED for `terminatedVisibleMs`, then 404.
 * - spot preemption: STOPPING → TERMINATED (kept, as `instanceTerminationAction: STOP` does), and a
 *   `compute.instances.preempted` operation in the zone.
 */
import { randomBytes } from 'node:crypto';
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import type { GcpProvisioningModel } from './gcp-emulator-faults.js';

/** How long each step takes, in ms of the emulator's clock. */
export interface GcpEmulatorTimeline {
  /** An operation is PENDING this long, then RUNNING. Default 200. */
  operationPendingMs: number;
  /** PROVISIONING → STAGING; the insert operation is DONE then. Default 1000. */
  provisioningMs: number;
  /** STAGING → RUNNING (with hosts, also not before the host is up). Default 1000. */
  stagingMs: number;
  /** STOPPING → TERMINATED (delete and preemption). Default 1000. */
  stoppingMs: number;
  /** A deleted instance shows TERMINATED this long, then 404. Default 1000. */
  terminatedVisibleMs: number;
}

export const DEFAULT_GCP_EMULATOR_TIMELINE: Readonly<GcpEmulatorTimeline> = {
  operationPendingMs: 200,
  provisioningMs: 1000,
  stagingMs: 1000,
  stoppingMs: 1000,
  terminatedVisibleMs: 1000,
};

export type GcpInstanceStatus = 'PROVISIONING' | 'STAGING' | 'RUNNING' | 'STOPPING' | 'TERMINATED';
export type GcpOperationStatus = 'PENDING' | 'RUNNING' | 'DONE';

/** An operation's `error` (with the `httpError*` fields), as a failed insert reports it. */
export interface GcpOperationError {
  readonly code: string;
  readonly message: string;
  readonly httpStatus: number;
  readonly httpMessage: string;
  readonly errorDetails: readonly unknown[];
}

export interface GcpOperation {
  readonly id: string;
  readonly name: string;
  readonly zone: string;
  readonly operationType: 'insert' | 'delete' | 'compute.instances.preempted' | 'attachDisk' | 'detachDisk';
  /** What the operation acts on: an instance (default) or a disk of its zone. */
  readonly targetKind?: 'instances' | 'disks';
  readonly targetName: string;
  readonly targetId: string;
  readonly insertTime: number;
  readonly runningAt: number;
  /** When DONE; a function so a delete's end follows its instance (Infinity: not yet known). */
  readonly doneAt: () => number;
  /** Set when it fails; an operation that waits on a host (attachDisk) may fail late. */
  error: GcpOperationError | undefined;
  readonly statusMessage: string | undefined;
}

export interface GcpInstance {
  readonly id: string;
  readonly name: string;
  readonly zone: string;
  readonly machineType: string;
  readonly provisioningModel: GcpProvisioningModel;
  /** The insert body as sent (disks, metadata, labels, tags, scheduling…), echoed by get. */
  readonly body: Readonly<Record<string, unknown>>;
  /** `startup-script` (or `user-data`) metadata: what the host runs. */
  readonly userData: string;
  /** What the boot image's hosts have (Docker or not). */
  readonly hostKind: EmulatedHostKind;
  /** Whether an external IP was asked for (an access config). */
  readonly externalIpWanted: boolean;
  readonly createdAt: number;
  /** A failing insert: the operation fails at `at` and the instance is gone from then. */
  readonly failure: { readonly at: number; readonly error: GcpOperationError } | undefined;
  readonly natIpDelayMs: number;
  readonly preemptAfterRunningMs: number | undefined;
  readonly madeUpInternalIp: string;
  readonly madeUpExternalIp: string;
  /** The instance's host, with hosts (none for a failing insert); its stop waits for its launch. */
  host: EmulatedInstanceHost | undefined;
  /** When the host came up, by the emulator's clock: the instance is RUNNING no earlier. */
  hostUpAt: number | undefined;
  stoppingAt: number | undefined;
  /** Why it stops: deleted (then 404) or preempted (stays TERMINATED). */
  stopReason: 'deleted' | 'preempted' | undefined;
  /** Removed behind the API's back (`forget`). */
  forgotten: boolean;
}

export interface NewGcpInstance {
  readonly name: string;
  readonly zone: string;
  readonly machineType: string;
  readonly provisioningModel: GcpProvisioningModel;
  readonly body: Readonly<Record<string, unknown>>;
  readonly userData: string;
  readonly hostKind: EmulatedHostKind;
  readonly externalIpWanted: boolean;
  /** Set when the insert fails: how long after the insert, and with what. */
  readonly failure: { readonly afterMs: number; readonly error: GcpOperationError } | undefined;
  readonly natIpDelayMs: number;
  readonly preemptAfterRunningMs: number | undefined;
}

export interface GcpInstancesOptions {
  readonly clock: () => number;
  readonly timeline: GcpEmulatorTimeline;
  readonly hosts: EmulatedHosts | undefined;
  readonly onHostError: (instanceName: string, error: unknown) => void;
}

export class GcpInstances {
  readonly #all: GcpInstance[] = [];
  readonly #operations: GcpOperation[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #options: GcpInstancesOptions;
  #sequence = 0;

  constructor(options: GcpInstancesOptions) {
    this.#options = options;
  }

  /** Every instance ever inserted, oldest first, including those gone from the API. */
  all(): readonly GcpInstance[] {
    return this.#all;
  }

  /** The instance `name` in `zone` while the API still shows it. */
  find(zone: string, name: string): GcpInstance | undefined {
    return this.#all.find(
      (each) => each.zone === zone && each.name === name && this.status(each) !== undefined,
    );
  }

  /** The instances of `zone` the API shows, oldest first. */
  listIn(zone: string): GcpInstance[] {
    return this.#all.filter((each) => each.zone === zone && this.status(each) !== undefined);
  }

  insert(spec: NewGcpInstance): { instance: GcpInstance; operation: GcpOperation } {
    const now = this.#options.clock();
    this.#sequence += 1;
    const { failure, ...rest } = spec;
    const instance: GcpInstance = {
      ...rest,
      id: String(4_000_000_000_000_000_000n + BigInt(this.#sequence) * 7_919n),
      createdAt: now,
      failure: failure ? { at: now + failure.afterMs, error: failure.error } : undefined,
      madeUpInternalIp: `10.128.${Math.floor(this.#sequence / 250)}.${(this.#sequence % 250) + 2}`,
      madeUpExternalIp: `34.16.${Math.floor(this.#sequence / 250)}.${(this.#sequence % 250) + 2}`,
      host: undefined,
      hostUpAt: undefined,
      stoppingAt: undefined,
      stopReason: undefined,
      forgotten: false,
    };
    this.#all.push(instance);
    const operation = this.addOperation({
      zone: instance.zone,
      operationType: 'insert',
      targetName: instance.name,
      targetId: instance.id,
      insertTime: now,
      runningAt: now + this.#options.timeline.operationPendingMs,
      doneAt: () => instance.failure?.at ?? now + this.#options.timeline.provisioningMs,
      error: instance.failure?.error,
      statusMessage: undefined,
    });
    // A failing insert never gets a machine.
    if (!instance.failure) this.#launchHost(instance);
    return { instance, operation };
  }

  /** Starts deleting (idempotent: a second delete answers a new operation, the instance keeps its course). */
  delete(instance: GcpInstance): GcpOperation {
    const now = this.#options.clock();
    if (instance.stoppingAt === undefined) this.#stop(instance, 'deleted', now);
    else if (instance.stopReason === 'preempted') {
      // Deleting a preempted (TERMINATED) instance removes it at once.
      instance.stopReason = 'deleted';
      instance.stoppingAt = now - this.#options.timeline.stoppingMs;
    }
    const stoppingAt = instance.stoppingAt ?? now;
    return this.addOperation({
      zone: instance.zone,
      operationType: 'delete',
      targetName: instance.name,
      targetId: instance.id,
      insertTime: now,
      runningAt: now,
      doneAt: () => Math.max(now, stoppingAt + this.#options.timeline.stoppingMs),
      error: undefined,
      statusMessage: undefined,
    });
  }

  /** Preempts a spot instance now (STOPPING → TERMINATED, host gone, a preempted operation). */
  preempt(instance: GcpInstance, at = this.#options.clock()): void {
    if (instance.provisioningModel !== 'SPOT') throw new Error(`${instance.name} is not a spot instance`);
    const status = this.#statusNow(instance);
    if (status !== 'RUNNING' && status !== 'STAGING' && status !== 'PROVISIONING') {
      throw new Error(
        `${instance.name} is ${status ?? 'gone'}; only a provisioning or running spot instance can be preempted`,
      );
    }
    this.#stop(instance, 'preempted', at);
    this.addOperation({
      zone: instance.zone,
      operationType: 'compute.instances.preempted',
      targetName: instance.name,
      targetId: instance.id,
      insertTime: at,
      runningAt: at,
      doneAt: () => at,
      error: undefined,
      statusMessage: 'Instance was preempted.',
    });
  }

  /** Removes the instance as if the provider had reclaimed it long ago: its host stops, the API 404s. */
  forget(instance: GcpInstance): void {
    if (instance.stoppingAt === undefined) this.#stop(instance, 'deleted', this.#options.clock());
    instance.forgotten = true;
  }

  /** The status the API shows, or undefined once the instance is gone (404). */
  status(instance: GcpInstance): GcpInstanceStatus | undefined {
    this.#preemptIfDue(instance);
    return this.#statusNow(instance);
  }

  /** The status from the clock alone (no due preemption applied). */
  #statusNow(instance: GcpInstance): GcpInstanceStatus | undefined {
    if (instance.forgotten) return undefined;
    const now = this.#options.clock();
    const { stoppingMs, terminatedVisibleMs } = this.#options.timeline;
    if (instance.stoppingAt !== undefined) {
      if (now < instance.stoppingAt + stoppingMs) return 'STOPPING';
      if (instance.stopReason === 'preempted') return 'TERMINATED';
      return now < instance.stoppingAt + stoppingMs + terminatedVisibleMs ? 'TERMINATED' : undefined;
    }
    if (instance.failure) return now < instance.failure.at ? 'PROVISIONING' : undefined;
    if (now < instance.createdAt + this.#options.timeline.provisioningMs) return 'PROVISIONING';
    const runningAt = this.#runningAt(instance);
    return runningAt !== undefined && now >= runningAt ? 'RUNNING' : 'STAGING';
  }

  /** The internal IP (the host's address with hosts), once the instance has left PROVISIONING. */
  internalIp(instance: GcpInstance): string | undefined {
    const status = this.status(instance);
    if (status === undefined || status === 'PROVISIONING' || status === 'TERMINATED') return undefined;
    return this.#options.hosts ? instance.host?.address : instance.madeUpInternalIp;
  }

  /** The natIP: only while RUNNING, and only once a SLOW_NAT_IP delay has passed. */
  natIp(instance: GcpInstance): string | undefined {
    if (!instance.externalIpWanted || this.status(instance) !== 'RUNNING') return undefined;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined || this.#options.clock() < runningAt + instance.natIpDelayMs)
      return undefined;
    return instance.host?.address ?? instance.madeUpExternalIp;
  }

  operation(zone: string, name: string): GcpOperation | undefined {
    return this.#operations.find((each) => each.zone === zone && each.name === name);
  }

  operationsIn(zone: string): GcpOperation[] {
    const now = this.#options.clock();
    for (const instance of this.#all) this.#preemptIfDue(instance);
    return this.#operations.filter((each) => each.zone === zone && each.insertTime <= now);
  }

  operationStatus(operation: GcpOperation): GcpOperationStatus {
    const now = this.#options.clock();
    if (now >= operation.doneAt()) return 'DONE';
    return now >= operation.runningAt ? 'RUNNING' : 'PENDING';
  }

  /** Stops the timers of scheduled preemptions (the emulator's shutdown). */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Records a zone operation (the instances' own, and the disks' of `gcp-compute-disks.ts`). */
  addOperation(spec: Omit<GcpOperation, 'id' | 'name'>): GcpOperation {
    this.#sequence += 1;
    const hex = (bytes: number) => randomBytes(bytes).toString('hex');
    const operation: GcpOperation = {
      ...spec,
      id: String(7_000_000_000_000_000_000n + BigInt(this.#sequence) * 104_729n),
      name: `operation-${spec.insertTime}-${hex(7).slice(0, 13)}-${hex(4)}-${hex(4)}`,
    };
    this.#operations.push(operation);
    return operation;
  }

  #launchHost(instance: GcpInstance): void {
    const hosts = this.#options.hosts;
    if (!hosts) {
      this.#schedulePreemption(instance);
      return;
    }
    // The host is named by the instance's numeric id: names are reused after a delete. Once the
    // instance is stopping (which stops its host), how the launch ends is no news.
    instance.host = new EmulatedInstanceHost(
      hosts,
      { instanceId: instance.id, userData: instance.userData, kind: instance.hostKind },
      (error) => {
        this.#options.onHostError(instance.name, error);
        this.#stop(instance, 'deleted', this.#options.clock());
      },
      () => {
        instance.hostUpAt = this.#options.clock();
        this.#schedulePreemption(instance);
      },
    );
  }

  /** When the instance is (or will be) RUNNING: after PROVISIONING and STAGING, with hosts not before its host is up. */
  #runningAt(instance: GcpInstance): number | undefined {
    const { provisioningMs, stagingMs } = this.#options.timeline;
    const afterStaging = instance.createdAt + provisioningMs + stagingMs;
    if (!this.#options.hosts) return afterStaging;
    return instance.hostUpAt === undefined ? undefined : Math.max(afterStaging, instance.hostUpAt);
  }

  #stop(instance: GcpInstance, reason: 'deleted' | 'preempted', at: number): void {
    instance.stoppingAt = at;
    instance.stopReason = reason;
    // A host still booting is terminated once its launch settles: never leave one behind.
    void instance.host?.stop().catch((error: unknown) => this.#options.onHostError(instance.name, error));
  }

  /** A PREEMPTION fault takes a spot instance back `preemptAfterRunningMs` after it started running. */
  #preemptIfDue(instance: GcpInstance): void {
    if (instance.preemptAfterRunningMs === undefined || instance.stoppingAt !== undefined) return;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined) return;
    const due = runningAt + instance.preemptAfterRunningMs;
    if (this.#options.clock() < due) return;
    this.preempt(instance, due);
  }

  /** Makes a due preemption happen even when nobody looks, so the host dies on time. */
  #schedulePreemption(instance: GcpInstance): void {
    if (instance.preemptAfterRunningMs === undefined) return;
    const runningAt = this.#runningAt(instance);
    if (runningAt === undefined) return;
    const delay = Math.max(0, runningAt + instance.preemptAfterRunningMs - this.#options.clock());
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#preemptIfDue(instance);
    }, delay);
    timer.unref();
    this.#timers.add(timer);
  }
}
