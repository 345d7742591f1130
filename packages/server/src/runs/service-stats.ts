/**
 * How many requests the proxy forwarded to each service run, per second, so the run pipeline
 * can scale on requests per second (dstack's RPS autoscaler reads the proxy's stats the same
 * way). Kept in this process: a server sees the requests its own proxy forwards.
 */

/** Seconds of history kept per run: the longest `scaling.window` that is averaged exactly. */
const KEPT_SECONDS = 600;

export class ServiceRequestStats {
  private readonly byRun = new Map<string, Map<number, number>>();
  private readonly waitingByRun = new Map<string, number>();

  /** A request to `runId` waits for a replica (the service is at zero); `done` when it stops waiting. */
  waitStarted(runId: string): { done(): void } {
    this.waitingByRun.set(runId, (this.waitingByRun.get(runId) ?? 0) + 1);
    let done = false;
    return {
      done: () => {
        if (done) return;
        done = true;
        const left = (this.waitingByRun.get(runId) ?? 1) - 1;
        if (left > 0) this.waitingByRun.set(runId, left);
        else this.waitingByRun.delete(runId);
      },
    };
  }

  /** How many requests to `runId` wait for a replica now. */
  waiting(runId: string): number {
    return this.waitingByRun.get(runId) ?? 0;
  }

  /** Counts one request to `runId` at `now` (ms). */
  record(runId: string, now = Date.now()): void {
    const second = Math.floor(now / 1000);
    let buckets = this.byRun.get(runId);
    if (!buckets) {
      buckets = new Map();
      this.byRun.set(runId, buckets);
    }
    buckets.set(second, (buckets.get(second) ?? 0) + 1);
    if (buckets.size > KEPT_SECONDS) {
      for (const kept of buckets.keys()) if (kept <= second - KEPT_SECONDS) buckets.delete(kept);
    }
  }

  /** Requests per second to `runId` over the last `windowSeconds` before `now`. */
  rps(runId: string, windowSeconds: number, now = Date.now()): number {
    const buckets = this.byRun.get(runId);
    if (!buckets || windowSeconds <= 0) return 0;
    const since = now / 1000 - windowSeconds;
    let requests = 0;
    for (const [second, count] of buckets) if (second + 1 > since) requests += count;
    return requests / windowSeconds;
  }

  /** Forgets a finished run. */
  forget(runId: string): void {
    this.byRun.delete(runId);
  }
}
