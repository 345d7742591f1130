/**
 * The requests per second the RPS autoscaler scales each service run on, and the requests
 * waiting for a replica of a service scaled to zero: the requests this server's proxy forwarded
 * (counted here as they pass) plus those each gateway forwarded (its `GatewayStats`, collected by
 * the gateway pipeline). Kept in this process, as dstack's autoscaler reads its proxies' stats.
 */
import { type GatewayStats, requestsPerSecond, ServiceRequestCounts } from '@dstack/core/agent-protocol';

/** A gateway's waiting requests count this long after its last report (it may be out of reach since). */
const REPORTED_WAITING_VALID_MS = 15_000;

/** One gateway's last report, its seconds kept on the gateway's clock. */
interface GatewayReport {
  /** The gateway's clock minus this server's when the report came (ms). */
  clockOffsetMs: number;
  receivedAt: number;
  requests: Map<string, Map<number, number>>;
  waiting: Map<string, number>;
}

export class ServiceRequestStats {
  private readonly own = new ServiceRequestCounts();
  private readonly gateways = new Map<string, GatewayReport>();

  /** A request to `runId` waits for a replica (the service is at zero); `done` when it stops waiting (see `ServiceRequestCounts`). */
  waitStarted(runId: string, bounds?: { until: number; signal?: AbortSignal }): { done(): void } {
    return this.own.waitStarted(runId, bounds);
  }

  /** How many requests to `runId` wait for a replica now: at this proxy and at the gateways. */
  waiting(runId: string, now = Date.now()): number {
    let waiting = this.own.waiting(runId);
    for (const report of this.gateways.values()) {
      if (now - report.receivedAt <= REPORTED_WAITING_VALID_MS) waiting += report.waiting.get(runId) ?? 0;
    }
    return waiting;
  }

  /** Counts one request to `runId` at `now` (ms), forwarded by this server's proxy. */
  record(runId: string, now = Date.now()): void {
    this.own.record(runId, now);
  }

  /**
   * Takes gateway `gatewayId`'s stats in place of its previous ones (each report holds the whole
   * kept history, so a report missed or read twice counts nothing twice).
   */
  report(gatewayId: string, stats: GatewayStats, now = Date.now()): void {
    this.gateways.set(gatewayId, {
      clockOffsetMs: stats.now - now,
      receivedAt: now,
      requests: new Map(stats.services.map((service) => [service.run_id, new Map(service.requests)])),
      waiting: new Map(stats.services.map((service) => [service.run_id, service.waiting])),
    });
  }

  /** Forgets a gateway that is gone. */
  forgetGateway(gatewayId: string): void {
    this.gateways.delete(gatewayId);
  }

  /** Requests per second to `runId` over the last `windowSeconds` before `now`: this proxy's and the gateways'. */
  rps(runId: string, windowSeconds: number, now = Date.now()): number {
    let rps = this.own.rps(runId, windowSeconds, now);
    for (const report of this.gateways.values()) {
      rps += requestsPerSecond(report.requests.get(runId), windowSeconds, now + report.clockOffsetMs);
    }
    return rps;
  }

  /** Forgets a finished run. */
  forget(runId: string): void {
    this.own.forget(runId);
    for (const report of this.gateways.values()) {
      report.requests.delete(runId);
      report.waiting.delete(runId);
    }
  }
}
