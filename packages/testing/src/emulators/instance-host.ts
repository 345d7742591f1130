/**
 * The host an emulated instance boots, for the VM emulators (AWS, GCP, Lambda, Verda, Nebius, OCI,
 * Azure): the launch starts at once and settles in the background, `stop()` waits for a launch still
 * under way and terminates what it made, so no host is left behind whatever the order of launch and
 * termination. Once `stop()` has begun, the instance is going away: how its launch ends is no
 * longer news, so neither `onUp` nor `onFailure` hears of it (a host stopped while it boots fails
 * its launch, which is no host failure).
 */
import type { EmulatedHosts, HostLaunchRequest } from './emulated-hosts.js';

export class EmulatedInstanceHost {
  #state: { status: 'launching' | 'failed' } | { status: 'up'; address: string } = { status: 'launching' };
  #stopping = false;
  readonly #launch: Promise<void>;
  readonly #hosts: EmulatedHosts;
  readonly #instanceId: string;

  /**
   * `onFailure` hears why a launch failed (the instance then reports an error state); `onUp`, for
   * emulators that change the instance when its host is up, hears the host's address.
   */
  constructor(
    hosts: EmulatedHosts,
    request: HostLaunchRequest,
    onFailure: (error: unknown) => void,
    onUp?: (address: string) => void,
  ) {
    this.#hosts = hosts;
    this.#instanceId = request.instanceId;
    this.#launch = hosts.launch(request).then(
      (host) => {
        this.#state = { status: 'up', address: host.address };
        if (!this.#stopping) onUp?.(host.address);
      },
      (error: unknown) => {
        this.#state = { status: 'failed' };
        if (!this.#stopping) onFailure(error);
      },
    );
  }

  get status(): 'launching' | 'up' | 'failed' {
    return this.#state.status;
  }

  /** The host's address once it is up. */
  get address(): string | undefined {
    return this.#state.status === 'up' ? this.#state.address : undefined;
  }

  /**
   * Resolves once the launch is over (a failed launch resolves it too) and `onUp` or `onFailure`
   * has heard of it: work that needs the host (a disk attached while it boots) waits here.
   */
  get settled(): Promise<void> {
    return this.#launch;
  }

  /** Terminates the host (after its launch settles); idempotent. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#launch;
    await this.#hosts.terminate(this.#instanceId);
  }
}
