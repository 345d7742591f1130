/**
 * The emulated RunPod's pods: each one a real Docker container of its own image (through the
 * toolkit's rental containers), with the Docker arguments RunPod takes from `dockerArgs` (a
 * command, or dstack's JSON `{"entrypoint": [...], "cmd": [...]}`), the environment the deploy
 * gave plus the `RUNPOD_*` variables RunPod sets, and the `ports` it asked for (`10022/tcp`)
 * published on random host ports. A pod has `runtime: null` until its container runs (RunPod
 * pulls the image first); an image that is not here is a pull that never ends, as RunPod keeps
 * retrying it. Spot (interruptible) pods can be interrupted: their container stops and the pod is
 * `EXITED`.
 */
import { randomBytes } from 'node:crypto';
import {
  type RentalContainerSpec,
  RentalContainerStartError,
  type RentalContainers,
  type RentalPortMap,
  type RentalPortRequest,
} from '../hosts/docker-rental-containers.js';

/** What a deploy asked for, once validated. */
export interface RunpodPodRequest {
  readonly name: string;
  readonly imageName: string;
  /** The GPU type, or null for a CPU pod. */
  readonly gpuTypeId: string | null;
  /** The CPU flavor offer (`cpu3c-2-4`) of a CPU pod. */
  readonly cpuInstanceId: string | null;
  readonly gpuCount: number;
  readonly vcpuCount: number;
  readonly memoryInGb: number;
  readonly containerDiskInGb: number;
  readonly cloudType: 'SECURE' | 'COMMUNITY';
  /** The data center (Secure Cloud) or country (Community Cloud) it runs in. */
  readonly location: string;
  readonly dockerArgs: string;
  readonly ports: string;
  readonly env: readonly { key: string; value: string }[];
  readonly containerRegistryAuthId: string | null;
  /** $/h of the pod. */
  readonly costPerHr: number;
  /** The bid per GPU of an interruptible pod; null on demand. */
  readonly bidPerGpu: number | null;
}

export type RunpodDesiredStatus = 'RUNNING' | 'EXITED';

export type RunpodPodContainer =
  | { readonly kind: 'starting' }
  | { readonly kind: 'running'; readonly ports: RentalPortMap }
  /** The image could not be pulled: RunPod retries for ever, the pod never gets a runtime. */
  | { readonly kind: 'pulling'; readonly message: string }
  | { readonly kind: 'failed'; readonly message: string };

export interface RunpodPod {
  /** RunPod's pod id (`abcdefgh012345`). */
  readonly id: string;
  /** The container's number on this machine. */
  readonly sequence: number;
  readonly request: RunpodPodRequest;
  readonly machineId: string;
  readonly createdAt: number;
  desiredStatus: RunpodDesiredStatus;
  lastStatusChange: string;
  container: RunpodPodContainer;
  /** When the container was first seen running (for `uptimeSeconds`). */
  runningSince: number | undefined;
}

export interface RunpodPodsOptions {
  readonly clock: () => number;
  /** Where pods run; without, they "run" at once with made-up host ports (fast API tests). */
  readonly containers: RentalContainers | undefined;
  /** The public address `runtime.ports` gives. */
  readonly publicIp: string;
  readonly onContainerError: (podId: string, error: unknown) => void;
}

const FIRST_MADE_UP_HOST_PORT = 41_000;

/** `ports: "10022/tcp,8888/http"`: the TCP ones are published (HTTP ones go through RunPod's proxy, not modelled). */
export function tcpPortsOf(ports: string): RentalPortRequest[] {
  return ports
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .flatMap((entry) => {
      const [port, protocol] = entry.split('/');
      const number = Number(port);
      return protocol === 'tcp' && Number.isInteger(number)
        ? [{ containerPort: number, protocol: 'tcp' }]
        : [];
    });
}

/**
 * The entrypoint and command of `dockerArgs`: dstack's JSON object
 * `{"entrypoint": ["/bin/sh", "-c"], "cmd": ["…"]}`, or RunPod's plain "Docker command", the
 * image's command replaced by its words.
 */
export function dockerArgumentsOf(dockerArgs: string): { entrypoint?: string; command?: string[] } {
  const trimmed = dockerArgs.trim();
  if (trimmed === '') return {};
  if (trimmed.startsWith('{')) {
    const parsed = JSON.parse(trimmed) as { entrypoint?: unknown; cmd?: unknown };
    const entrypoint = Array.isArray(parsed.entrypoint) ? parsed.entrypoint.map(String) : [];
    const cmd = Array.isArray(parsed.cmd) ? parsed.cmd.map(String) : [];
    return entrypoint.length > 0
      ? { entrypoint: entrypoint[0], command: [...entrypoint.slice(1), ...cmd] }
      : { command: cmd };
  }
  return { command: trimmed.split(/\s+/) };
}

export class RunpodPods {
  readonly #pods = new Map<string, RunpodPod>();
  readonly #pending = new Set<Promise<void>>();
  #nextSequence = 1;
  #nextMadeUpPort = FIRST_MADE_UP_HOST_PORT;

  constructor(private readonly options: RunpodPodsOptions) {}

  /** Pods made so far, terminated ones included. */
  get createdCount(): number {
    return this.#nextSequence - 1;
  }

  /** Makes the pod and starts its container. */
  create(request: RunpodPodRequest): RunpodPod {
    const now = this.options.clock();
    const pod: RunpodPod = {
      id: randomBytes(7).toString('hex'),
      sequence: this.#nextSequence++,
      request,
      machineId: `m${randomBytes(5).toString('hex')}`,
      createdAt: now,
      desiredStatus: 'RUNNING',
      lastStatusChange: `Rented by User: ${new Date(now).toUTCString()}`,
      container: { kind: 'starting' },
      runningSince: undefined,
    };
    this.#pods.set(pod.id, pod);
    this.#track(this.#start(pod));
    return pod;
  }

  get(id: string): RunpodPod | undefined {
    return this.#pods.get(id);
  }

  all(): RunpodPod[] {
    return [...this.#pods.values()];
  }

  /** Seconds since the container started; 0 before. */
  uptimeSeconds(pod: RunpodPod): number {
    if (pod.container.kind !== 'running') return 0;
    pod.runningSince ??= this.options.clock();
    return Math.floor((this.options.clock() - pod.runningSince) / 1000);
  }

  /** RunPod takes an interruptible pod back: its container stops and the pod is `EXITED`. */
  interrupt(pod: RunpodPod): void {
    if (pod.request.bidPerGpu === null)
      throw new Error(`pod ${pod.id} is on demand: only spot pods are interrupted`);
    if (pod.desiredStatus === 'EXITED') return;
    pod.desiredStatus = 'EXITED';
    pod.lastStatusChange = `Outbid: ${new Date(this.options.clock()).toUTCString()}`;
    pod.container = { kind: 'failed', message: 'interrupted' };
    const { containers } = this.options;
    if (containers) {
      this.#track(
        containers.stop(pod.sequence).catch((error: unknown) => this.options.onContainerError(pod.id, error)),
      );
    }
  }

  /** Removes the pod and its container; false when there is no such pod. */
  async terminate(id: string): Promise<boolean> {
    const pod = this.#pods.get(id);
    if (!pod) return false;
    this.#pods.delete(id);
    await this.options.containers?.remove(pod.sequence);
    return true;
  }

  /** Waits until the containers being started or stopped are. */
  async settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  async close(): Promise<void> {
    await this.settle();
    for (const id of [...this.#pods.keys()]) await this.terminate(id);
  }

  #track(work: Promise<void>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  async #start(pod: RunpodPod): Promise<void> {
    const spec = this.#containerSpec(pod);
    try {
      const ports = this.options.containers
        ? await this.options.containers.start(spec)
        : this.#madeUpPorts(spec);
      if (this.#pods.get(pod.id) !== pod) {
        await this.options.containers?.remove(pod.sequence);
        return;
      }
      pod.container = { kind: 'running', ports };
    } catch (error) {
      if (this.#pods.get(pod.id) !== pod) {
        await this.options.containers?.remove(pod.sequence).catch(() => undefined);
        return;
      }
      if (error instanceof RentalContainerStartError) {
        pod.container =
          error.stage === 'pull'
            ? { kind: 'pulling', message: error.message }
            : { kind: 'failed', message: error.message };
        return;
      }
      pod.container = { kind: 'failed', message: `emulator: the container did not start: ${String(error)}` };
      this.options.onContainerError(pod.id, error);
    }
  }

  #containerSpec(pod: RunpodPod): RentalContainerSpec {
    const { request } = pod;
    const { entrypoint, command } = dockerArgumentsOf(request.dockerArgs);
    const environment: Record<string, string> = {
      RUNPOD_POD_ID: pod.id,
      RUNPOD_POD_HOSTNAME: `${pod.id}-${pod.machineId}`,
      RUNPOD_GPU_COUNT: String(request.gpuCount),
      RUNPOD_CPU_COUNT: String(request.vcpuCount),
      RUNPOD_PUBLIC_IP: this.options.publicIp,
      RUNPOD_DC_ID: request.cloudType === 'SECURE' ? request.location : '',
    };
    for (const { key, value } of request.env) environment[key] = value;
    return {
      rentalId: pod.sequence,
      image: request.imageName,
      entrypoint,
      command,
      environment,
      ports: tcpPortsOf(request.ports),
      hostname: pod.id,
      user: undefined,
    };
  }

  #madeUpPorts(spec: RentalContainerSpec): RentalPortMap {
    const ports: RentalPortMap = {};
    for (const port of spec.ports) {
      ports[`${port.containerPort}/${port.protocol}`] = [
        { HostIp: '127.0.0.1', HostPort: String(this.#nextMadeUpPort++) },
      ];
    }
    return ports;
  }
}
