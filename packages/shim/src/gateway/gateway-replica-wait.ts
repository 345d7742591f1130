/**
 * Requests held for a replica of a service scaled to zero (`replicas: 0..N`), as the server's
 * proxy holds them: the gateway counts them as waiting (the server reads that in its stats and
 * starts a replica) and lets each go once a state with a ready replica arrives, or answers 503
 * after `SCALE_FROM_ZERO_WAIT_MS` or when the client leaves.
 */
import type { GatewayService } from '@dstack/core/agent-protocol';

type Lookup = (hostname: string) => GatewayService | null;

export class ReplicaWaits {
  readonly #waiting = new Set<() => void>();

  /** A new state arrived: every held request looks at its service again. */
  stateChanged(): void {
    for (const wake of [...this.#waiting]) wake();
  }

  /**
   * The service at `hostname` once it has a ready replica; null after `timeoutMs`, when the
   * service is gone from the state, or when `signal` aborts.
   */
  waitForReplica(
    hostname: string,
    lookup: Lookup,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<GatewayService | null> {
    return new Promise((resolve) => {
      const finish = (service: GatewayService | null) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
        this.#waiting.delete(wake);
        resolve(service);
      };
      const wake = () => {
        const service = lookup(hostname);
        if (!service) finish(null);
        else if (service.replicas.length > 0) finish(service);
      };
      const abort = () => finish(null);
      const timer = setTimeout(() => finish(null), timeoutMs);
      signal.addEventListener('abort', abort);
      this.#waiting.add(wake);
      if (signal.aborted) abort();
    });
  }
}
