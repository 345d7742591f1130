import { type EmulatorResponse, json } from './emulator-responses.js';

/** A fault the emulator applies to a request instead of (or before) its handler. */
export type EmulatorFault =
  /** Answer with this response; the handler does not run. */
  | { readonly kind: 'respond'; readonly response: EmulatorResponse }
  /** Wait, then run the handler as usual. */
  | { readonly kind: 'delay'; readonly delayMs: number }
  /** Destroy the connection without answering (the client sees ECONNRESET / "socket hang up"). */
  | { readonly kind: 'reset' };

/** Every route: a fault registered for it applies to any request a route matched. */
export const ANY_ROUTE = '*';

/** The answer `throttleNext` sends unless told: 429 with a `RequestLimitExceeded` code and `Retry-After: 1`. */
export const DEFAULT_THROTTLE_RESPONSE: EmulatorResponse = json(
  { code: 'RequestLimitExceeded', message: 'Request limit exceeded.' },
  429,
  { 'retry-after': '1' },
);

interface QueuedFault {
  fault: EmulatorFault;
  remaining: number;
}

/**
 * Faults queued per route name, applied to the next requests of the route in
 * the order they were queued. A route's own faults go before `ANY_ROUTE` faults.
 */
export class EmulatorFaults {
  readonly #queues = new Map<string, QueuedFault[]>();

  /** Queues `fault` for the next `count` requests of `route`. */
  add(route: string, fault: EmulatorFault, count = 1): void {
    if (!Number.isInteger(count) || count < 1) {
      throw new Error(`Fault count must be a positive integer, got ${count}`);
    }
    const queue = this.#queues.get(route) ?? [];
    queue.push({ fault, remaining: count });
    this.#queues.set(route, queue);
  }

  /** The fault for the next request of `route`, consumed; undefined when none is queued. */
  take(route: string): EmulatorFault | undefined {
    return this.#takeFrom(route) ?? (route === ANY_ROUTE ? undefined : this.#takeFrom(ANY_ROUTE));
  }

  /** How many requests of `route` still get a fault (its own queue only). */
  pending(route: string): number {
    return (this.#queues.get(route) ?? []).reduce((total, queued) => total + queued.remaining, 0);
  }

  clear(): void {
    this.#queues.clear();
  }

  #takeFrom(route: string): EmulatorFault | undefined {
    const queue = this.#queues.get(route);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining === 0) queue.shift();
    return head.fault;
  }
}
