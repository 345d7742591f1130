/**
 * Vast.ai instances (contracts) and their life as `GET /instances/{id}/` shows it:
 *
 *   rented → actual_status null (nothing on the host yet; no address, no ports)
 *          → "loading" after `loadingAfterMs` (the image being pulled; `public_ipaddr` appears)
 *          → "running" once the container runs and `runningAfterMs` has passed (`ports` appear)
 *
 * A rental whose image cannot be pulled stays "loading" (Vast.ai's host keeps retrying the pull:
 * no container was made) with Docker's pull error in `status_msg`; one whose container Docker
 * made but cannot start ends at "created" with the OCI error in `status_msg`. A bid below the ask's `min_bid` makes a contract that
 * never starts (`cur_state`, `intended_status` and `next_state` all "stopped"); an outbid rental's
 * container is stopped and it shows "exited" with the three states "stopped". The status is
 * computed from the emulator's clock when it is read, so a test's manual clock steps through it;
 * the container itself starts at once (in the background) and stops when the outbid is noticed.
 */

import {
  type VastaiContainerSpec,
  VastaiContainerStartError,
  type VastaiContainers,
  type VastaiPortMap,
} from './vastai-docker-containers.js';
import type { VastaiOffer } from './vastai-emulator-data.js';
import { publishedPorts, type VastaiRentRequest } from './vastai-rent-request.js';

export interface VastaiEmulatorTimeline {
  /** How long `actual_status` stays null after the rental. Default 500 ms. */
  readonly loadingAfterMs: number;
  /** The soonest a rental shows "running" (later when its container is slower to start). Default 1500 ms. */
  readonly runningAfterMs: number;
}

export const DEFAULT_VASTAI_EMULATOR_TIMELINE: VastaiEmulatorTimeline = {
  loadingAfterMs: 500,
  runningAfterMs: 1500,
};

/** `actual_status` values the emulator shows. */
export type VastaiActualStatus = null | 'loading' | 'running' | 'created' | 'exited';

/** How a rental's container is doing. */
type ContainerState =
  | { readonly kind: 'starting' }
  | { readonly kind: 'running'; readonly ports: VastaiPortMap }
  | { readonly kind: 'failed'; readonly stage: 'pull' | 'runtime'; readonly message: string }
  /** A low bid: the contract exists but nothing runs. */
  | { readonly kind: 'never' };

export interface VastaiInstance {
  readonly id: number;
  readonly offer: VastaiOffer;
  readonly request: VastaiRentRequest;
  readonly createdAt: number;
  readonly lowBid: boolean;
  /** From an OUTBID fault: how long the rental runs before it is outbid. */
  readonly outbidAfterMs: number | undefined;
  container: ContainerState;
  /** When it first showed "running". */
  runningSince: number | undefined;
  /** When it was outbid. */
  outbidAt: number | undefined;
}

/** A failure the rental is told to have instead of starting its container (a fault). */
export interface VastaiForcedFailure {
  readonly stage: 'pull' | 'runtime';
}

export interface VastaiInstancesOptions {
  readonly clock: () => number;
  readonly timeline: VastaiEmulatorTimeline;
  /** The machine the containers run on; without, rentals "run" with made-up host ports. */
  readonly containers: VastaiContainers | undefined;
  /** What `public_ipaddr` says once the rental has an address (Vast.ai pads it with whitespace). */
  readonly publicIpAddress: string;
  readonly onContainerError: (contractId: number, error: unknown) => void;
}

/** The first contract id; each rental takes the next. */
const FIRST_CONTRACT_ID = 30_000_001;
/** Host ports made up for rentals without containers. */
const FIRST_MADE_UP_HOST_PORT = 40_000;

export class VastaiInstances {
  readonly #instances = new Map<number, VastaiInstance>();
  readonly #pending = new Set<Promise<void>>();
  #nextId = FIRST_CONTRACT_ID;
  #nextMadeUpPort = FIRST_MADE_UP_HOST_PORT;

  constructor(private readonly options: VastaiInstancesOptions) {}

  /** Makes the contract and, unless the bid is too low, starts its container. */
  create(
    offer: VastaiOffer,
    request: VastaiRentRequest,
    extras: { outbidAfterMs?: number; forcedFailure?: VastaiForcedFailure } = {},
  ): VastaiInstance {
    const lowBid = request.bid !== null && request.bid < offer.min_bid;
    const instance: VastaiInstance = {
      id: this.#nextId++,
      offer,
      request,
      createdAt: this.options.clock(),
      lowBid,
      outbidAfterMs: request.bid === null ? undefined : extras.outbidAfterMs,
      container: lowBid ? { kind: 'never' } : { kind: 'starting' },
      runningSince: undefined,
      outbidAt: undefined,
    };
    this.#instances.set(instance.id, instance);
    if (!lowBid) this.#track(this.#startContainer(instance, extras.forcedFailure));
    return instance;
  }

  #track(work: Promise<void>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  async #startContainer(instance: VastaiInstance, forced: VastaiForcedFailure | undefined): Promise<void> {
    const spec = containerSpec(instance);
    try {
      if (forced) throw new VastaiContainerStartError(forced.stage, forcedFailureMessage(forced, spec));
      const ports = this.options.containers
        ? await this.options.containers.start(spec)
        : this.#madeUpPorts(spec);
      if (this.#instances.get(instance.id) !== instance) {
        // Destroyed while its container started.
        await this.options.containers?.remove(instance.id);
        return;
      }
      instance.container = { kind: 'running', ports };
      // Outbid while its container started: it stops as soon as it runs.
      if (instance.outbidAt !== undefined) await this.options.containers?.stop(instance.id);
    } catch (error) {
      if (this.#instances.get(instance.id) !== instance) {
        // Destroyed while it started: whatever Docker made by now goes too.
        await this.options.containers?.remove(instance.id).catch(() => undefined);
        return;
      }
      instance.container =
        error instanceof VastaiContainerStartError
          ? { kind: 'failed', stage: error.stage, message: error.message }
          : {
              kind: 'failed',
              stage: 'runtime',
              message: `emulator: the container did not start: ${String(error)}`,
            };
      if (!(error instanceof VastaiContainerStartError)) this.options.onContainerError(instance.id, error);
    }
  }

  #madeUpPorts(spec: VastaiContainerSpec): VastaiPortMap {
    const ports: VastaiPortMap = {};
    for (const port of spec.ports) {
      ports[`${port.containerPort}/${port.protocol}`] = [
        { HostIp: '127.0.0.1', HostPort: String(this.#nextMadeUpPort++) },
      ];
    }
    return ports;
  }

  get(id: number): VastaiInstance | undefined {
    const instance = this.#instances.get(id);
    if (instance) this.refresh(instance);
    return instance;
  }

  all(): VastaiInstance[] {
    const instances = [...this.#instances.values()];
    for (const instance of instances) this.refresh(instance);
    return instances;
  }

  /** Notices what the clock brought: the first time it runs, and an outbid that is due. */
  refresh(instance: VastaiInstance): void {
    if (instance.outbidAt !== undefined) return;
    if (actualStatus(instance, this.options.clock(), this.options.timeline) !== 'running') return;
    instance.runningSince ??= this.options.clock();
    if (
      instance.outbidAfterMs !== undefined &&
      this.options.clock() >= instance.runningSince + instance.outbidAfterMs
    ) {
      this.outbid(instance);
    }
  }

  /** Another customer outbids the rental: its container stops. The error names a rental that cannot be outbid. */
  outbid(instance: VastaiInstance): void {
    if (instance.request.bid === null) {
      throw new Error(`instance ${instance.id} is on-demand: only interruptible rentals can be outbid`);
    }
    if (instance.outbidAt !== undefined) return;
    instance.outbidAt = this.options.clock();
    const { containers } = this.options;
    if (containers) {
      this.#track(
        containers
          .stop(instance.id)
          .catch((error: unknown) => this.options.onContainerError(instance.id, error)),
      );
    }
  }

  /** Destroys the contract and removes its container; false when there is no such contract. */
  async destroy(id: number): Promise<boolean> {
    const instance = this.#instances.get(id);
    if (!instance) return false;
    this.#instances.delete(id);
    await this.options.containers
      ?.remove(id)
      .catch((error: unknown) => this.options.onContainerError(id, error));
    return true;
  }

  /** The instance as Vast.ai's API shows it. */
  view(instance: VastaiInstance): Record<string, unknown> {
    const now = this.options.clock();
    const status = actualStatus(instance, now, this.options.timeline);
    const stopped = instance.lowBid || instance.outbidAt !== undefined;
    const ports =
      status === 'running' && instance.container.kind === 'running' ? instance.container.ports : {};
    const hostPorts = Object.values(ports).flatMap((bindings) =>
      bindings.map((each) => Number(each.HostPort)),
    );
    const hasAddress = status !== null || instance.outbidAt !== undefined;
    const { offer, request } = instance;
    const sshPort = ports['22/tcp']?.[0]?.HostPort;
    return {
      id: instance.id,
      machine_id: offer.machine_id,
      host_id: offer.host_id,
      bundle_id: offer.id,
      ask_contract_id: offer.id,
      actual_status: status,
      intended_status: stopped ? 'stopped' : 'running',
      cur_state: stopped ? 'stopped' : 'running',
      next_state: stopped ? 'stopped' : 'running',
      status_msg: statusMessage(instance, status),
      label: request.label,
      image_uuid: request.image,
      image_args: request.args ?? [],
      image_runtype: request.runtype,
      onstart: request.onstart,
      extra_env: Object.entries(request.environment),
      public_ipaddr: hasAddress ? this.options.publicIpAddress : null,
      ports,
      ssh_host: hasAddress ? this.options.publicIpAddress.trim() : null,
      ssh_port: sshPort === undefined ? null : Number(sshPort),
      direct_port_start: hostPorts.length > 0 ? Math.min(...hostPorts) : -1,
      direct_port_end: hostPorts.length > 0 ? Math.max(...hostPorts) : -1,
      is_bid: request.bid !== null,
      min_bid: offer.min_bid,
      dph_base: request.bid ?? offer.dph_base,
      dph_total:
        Math.round(
          ((request.bid ?? offer.dph_base) + (request.diskGb * offer.storage_cost) / 30 / 24) * 1e6,
        ) / 1e6,
      storage_cost: offer.storage_cost,
      disk_space: request.diskGb,
      gpu_name: offer.gpu_name,
      num_gpus: offer.num_gpus,
      gpu_ram: offer.gpu_ram,
      cpu_cores: offer.cpu_cores,
      cpu_cores_effective: offer.cpu_cores_effective,
      cpu_ram: offer.cpu_ram,
      geolocation: offer.geolocation,
      reliability2: offer.reliability2,
      driver_version: offer.driver_version,
      cuda_max_good: offer.cuda_max_good,
      start_date: instance.createdAt / 1000,
    };
  }

  /** Waits for the containers being started or stopped (tests; the emulator's close). */
  async settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** Destroys every contract (the emulator's close). */
  async close(): Promise<void> {
    await this.settle();
    await Promise.all([...this.#instances.keys()].map((id) => this.destroy(id)));
  }
}

/** The container a rental runs: in `args` mode `onstart` is the entrypoint and `args` its argv; otherwise `onstart` is a script run before the instance idles. */
function containerSpec(instance: VastaiInstance): VastaiContainerSpec {
  const { request } = instance;
  const argsMode = request.runtype === 'args';
  return {
    rentalId: instance.id,
    image: request.image,
    entrypoint: argsMode ? (request.onstart ?? undefined) : '/bin/sh',
    command: argsMode
      ? (request.args ?? undefined)
      : ['-c', `${request.onstart ?? ''}\nwhile :; do sleep 3600; done`],
    environment: request.environment,
    ports: publishedPorts(request),
    hostname: request.hostname,
    user: request.user ?? undefined,
  };
}

function forcedFailureMessage(forced: VastaiForcedFailure, spec: VastaiContainerSpec): string {
  if (forced.stage === 'pull') {
    return `Error response from daemon: pull access denied for ${spec.image.replace(/[:@][^/]*$/, '')}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`;
  }
  const program = spec.entrypoint ?? '/bin/sh';
  return `Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "${program}": stat ${program}: no such file or directory: unknown`;
}

export function actualStatus(
  instance: VastaiInstance,
  now: number,
  timeline: VastaiEmulatorTimeline,
): VastaiActualStatus {
  if (instance.outbidAt !== undefined) return 'exited';
  if (instance.lowBid) return null;
  const elapsed = now - instance.createdAt;
  if (elapsed < timeline.loadingAfterMs) return null;
  if (instance.container.kind === 'failed')
    return instance.container.stage === 'pull' ? 'loading' : 'created';
  if (instance.container.kind !== 'running' || elapsed < timeline.runningAfterMs) return 'loading';
  return 'running';
}

function statusMessage(instance: VastaiInstance, status: VastaiActualStatus): string | null {
  if (instance.lowBid) {
    return `Your bid of $${instance.request.bid}/hr is below the minimum bid of $${instance.offer.min_bid}/hr: the instance stays stopped until you raise it.`;
  }
  if (instance.outbidAt !== undefined) return 'Instance stopped: outbid by a higher bid on this machine.';
  if (status !== null && instance.container.kind === 'failed') return instance.container.message;
  if (status === 'loading') return `Pulling image ${instance.request.image}`;
  if (status === 'running') return `success, running ${instance.request.image}`;
  return null;
}
