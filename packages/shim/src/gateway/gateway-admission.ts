/**
 * What happens to a request for a service before it is forwarded, beside its caller's token
 * (gateway-routing.ts), as the server's proxy does it: the service's `rate_limits` (429 with
 * `Retry-After`), the count for the autoscaler (gateway-stats.ts), and, for a service scaled to
 * zero, the wait for its first replica (gateway-replica-wait.ts); a service with no ready replica
 * otherwise is answered 503.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type GatewayService, SCALE_FROM_ZERO_WAIT_MS } from '@dstack/core/agent-protocol';
import { answerJson } from './gateway-forward.js';
import { GatewayRateLimits } from './gateway-rate-limit.js';
import { ReplicaWaits } from './gateway-replica-wait.js';
import { GatewayRequestStats } from './gateway-stats.js';

/** Seconds a client is told to wait when a service has no replica. */
const NO_REPLICA_RETRY_AFTER_SECONDS = 5;

export class GatewayAdmission {
  readonly stats = new GatewayRequestStats();
  readonly #limits = new GatewayRateLimits();
  readonly #waits = new ReplicaWaits();
  readonly #lookup: (hostname: string) => GatewayService | null;
  readonly #waitMs: number;

  /** `lookup` finds a service in the current state by its host name. */
  constructor(lookup: (hostname: string) => GatewayService | null, waitMs = SCALE_FROM_ZERO_WAIT_MS) {
    this.#lookup = lookup;
    this.#waitMs = waitMs;
  }

  /** A new state arrived: held requests look for their replicas in it. */
  stateChanged(): void {
    this.#waits.stateChanged();
  }

  /**
   * The service as it is when the request may go to one of its replicas, or null when the
   * request was answered here (429, or 503 without a replica).
   */
  async admit(
    service: GatewayService,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<GatewayService | null> {
    const retryAfter = this.#limits.retryAfter(service, request);
    if (retryAfter !== null) {
      response.setHeader('retry-after', String(retryAfter));
      answerJson(response, 429, `Too many requests to service ${service.run_name}; retry later`);
      return null;
    }
    this.stats.record(service.run_id);
    let current: GatewayService | null = service;
    if (service.replicas.length === 0 && service.scales_from_zero) {
      const left = new AbortController();
      response.once('close', () => left.abort());
      const wait = this.stats.waitStarted(service.run_id);
      try {
        current = await this.#waits.waitForReplica(service.hostname, this.#lookup, this.#waitMs, left.signal);
      } finally {
        wait.done();
      }
    }
    if (!current || current.replicas.length === 0) {
      response.setHeader('retry-after', String(NO_REPLICA_RETRY_AFTER_SECONDS));
      answerJson(response, 503, `Service ${service.run_name} has no ready replica`);
      return null;
    }
    return current;
  }
}
