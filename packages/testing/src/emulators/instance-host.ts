/**
 * The host an emulated instance boots, for emulators whose API reports an instance's address
 * once its host is up (Lambda, Verda): the launch starts at once and settles in the background,
 * `stop()` waits for a launch still under way and terminates what it made, so no host is left
 * behind whatever the order of launch and termination.
 */
import type { EmulatedHosts, HostLaunchRequest } from './emulated-hosts.js';

export class EmulatedInstanceHost {
  #state: { status: 'launching' | 'failed' } | { status: 'up'; address: string } = { status: 'launching' };
  readonly #launch: Promise<void>;
  readonly #hosts: EmulatedHosts;
  readonly #instanceId: string;

  /** `onFailure` hears why a launch failed (the instance then reports an error state). */
  constructor(hosts: EmulatedHosts, request: HostLaunchRequest, onFailure: (error: unknown) => void) {
    this.#hosts = hosts;
    this.#instanceId = request.instanceId;
    this.#launch = hosts.launch(request).then(
      (host) => {
        this.#state = { status: 'up', address: host.address };
      },
      (error: unknown) => {
        this.#state = { status: 'failed' };
        onFailure(error);
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

  /** Terminates the host (after its launch settles); idempotent. */
  async stop(): Promise<void> {
    await this.#launch;
    await this.#hosts.terminate(this.#instanceId);
  }
}
