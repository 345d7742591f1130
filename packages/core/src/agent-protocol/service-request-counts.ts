/**
 * Requests to each service run, per second, and the requests waiting now for a replica of a
 * service scaled to zero: what the RPS autoscaler reads (dstack's autoscaler reads its proxies'
 * request stats the same way). The server's proxy counts the requests it forwards, the gateway
 * agent those it forwards, in this one counter; the gateway reports its seconds to the server
 * (`GatewayStats`, gateway-api.ts), which adds them to its own.
 */

/** Seconds of history kept per run: the longest `scaling.window` that is averaged exactly. */
export const REQUEST_COUNTS_KEPT_SECONDS = 600;

/**
 * How long a request to a service scaled to zero waits for its first replica (the server's proxy
 * and the gateway alike) before it is answered 503.
 */
export const SCALE_FROM_ZERO_WAIT_MS = 180_000;

export class ServiceRequestCounts {
  readonly #byRun = new Map<string, Map<number, number>>();
  readonly #waitingByRun = new Map<string, number>();

  /**
   * A request to `runId` waits for a replica (the service is at zero); `done` when it stops
   * waiting. A request held that way keeps counting until its replica answers (a replica slow to
   * listen must not be scaled down under it), so its wait ends by itself at `until` (epoch ms) or
   * when `signal` aborts (the client left), whichever comes first, should `done` never be called.
   */
  waitStarted(runId: string, bounds?: { until: number; signal?: AbortSignal }): { done(): void } {
    this.#waitingByRun.set(runId, (this.#waitingByRun.get(runId) ?? 0) + 1);
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      bounds?.signal?.removeEventListener('abort', done);
      const left = (this.#waitingByRun.get(runId) ?? 1) - 1;
      if (left > 0) this.#waitingByRun.set(runId, left);
      else this.#waitingByRun.delete(runId);
    };
    const timer = bounds ? setTimeout(done, Math.max(0, bounds.until - Date.now())) : undefined;
    timer?.unref();
    bounds?.signal?.addEventListener('abort', done, { once: true });
    return { done };
  }

  /** How many requests to `runId` wait for a replica now. */
  waiting(runId: string): number {
    return this.#waitingByRun.get(runId) ?? 0;
  }

  /** Counts one request to `runId` at `now` (ms). */
  record(runId: string, now = Date.now()): void {
    const second = Math.floor(now / 1000);
    let buckets = this.#byRun.get(runId);
    if (!buckets) {
      buckets = new Map();
      this.#byRun.set(runId, buckets);
    }
    buckets.set(second, (buckets.get(second) ?? 0) + 1);
    if (buckets.size > REQUEST_COUNTS_KEPT_SECONDS) dropOlder(buckets, second - REQUEST_COUNTS_KEPT_SECONDS);
  }

  /** Requests per second to `runId` over the last `windowSeconds` before `now`. */
  rps(runId: string, windowSeconds: number, now = Date.now()): number {
    return requestsPerSecond(this.#byRun.get(runId), windowSeconds, now);
  }

  /** The runs counted or waited for: what a report lists. */
  runIds(): string[] {
    return [...new Set([...this.#byRun.keys(), ...this.#waitingByRun.keys()])];
  }

  /** `[epoch second, requests]` of `runId` in the kept history before `now`, oldest first. */
  seconds(runId: string, now = Date.now()): Array<[number, number]> {
    const buckets = this.#byRun.get(runId);
    if (!buckets) return [];
    const oldest = Math.floor(now / 1000) - REQUEST_COUNTS_KEPT_SECONDS;
    dropOlder(buckets, oldest);
    if (buckets.size === 0 && this.waiting(runId) === 0) this.#byRun.delete(runId);
    return [...buckets.entries()].sort(([a], [b]) => a - b);
  }

  /** Forgets a finished run. */
  forget(runId: string): void {
    this.#byRun.delete(runId);
  }
}

function dropOlder(buckets: Map<number, number>, oldestKept: number): void {
  for (const second of buckets.keys()) if (second <= oldestKept) buckets.delete(second);
}

/** Requests per second over `windowSeconds` before `now` (ms) in per-second `buckets`. */
export function requestsPerSecond(
  buckets: ReadonlyMap<number, number> | undefined,
  windowSeconds: number,
  now: number,
): number {
  if (!buckets || windowSeconds <= 0) return 0;
  const since = now / 1000 - windowSeconds;
  let requests = 0;
  for (const [second, count] of buckets) if (second + 1 > since) requests += count;
  return requests / windowSeconds;
}
