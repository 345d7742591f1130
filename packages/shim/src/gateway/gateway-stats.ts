/**
 * The gateway's request stats (dstack's gateway collects them from nginx's access log): each
 * request to a service is counted per second, in the counter the server's proxy uses, and the
 * requests held for a replica of a service scaled to zero are counted while they wait. The server
 * reads them each pass (`GET /api/stats/collect` on the management API, through its SSH tunnel)
 * and scales on them as on its own proxy's.
 */
import { type GatewayStats, ServiceRequestCounts } from '@dstack/core/agent-protocol';

export class GatewayRequestStats {
  readonly #counts = new ServiceRequestCounts();

  /** Counts a request to the service of run `runId`. */
  record(runId: string, now = Date.now()): void {
    this.#counts.record(runId, now);
  }

  /** A request to `runId` is held for a replica; `done` when it stops waiting (see `ServiceRequestCounts`). */
  waitStarted(runId: string, bounds?: { until: number; signal?: AbortSignal }): { done(): void } {
    return this.#counts.waitStarted(runId, bounds);
  }

  /** What the stats route answers: every run counted in the kept history, or waited for now. */
  report(now = Date.now()): GatewayStats {
    return {
      now,
      services: this.#counts.runIds().map((runId) => ({
        run_id: runId,
        requests: this.#counts.seconds(runId, now),
        waiting: this.#counts.waiting(runId),
      })),
    };
  }
}
