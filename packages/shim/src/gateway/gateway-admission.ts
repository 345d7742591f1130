/**
 * What happens to a request for a service before it is forwarded, beside its caller's token
 * (gateway-routing.ts), as the server's proxy does it: the service's `rate_limits` (429 with
 * `Retry-After`), the count for the autoscaler (gateway-stats.ts), and, for a service scaled to
 * zero, the wait for its first replica (gateway-replica-wait.ts); a service with no ready replica
 * otherwise is answered 503. WebSocket upgrades go the same way, as at the server's proxy.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type GatewayService, SCALE_FROM_ZERO_WAIT_MS } from '@dstack/core/agent-protocol';
import { answerJson } from './gateway-forward.js';
import { GatewayRateLimits } from './gateway-rate-limit.js';
import { ReplicaWaits } from './gateway-replica-wait.js';
import { GatewayRequestStats } from './gateway-stats.js';

/** Seconds a client is told to wait when a service has no replica. */
const NO_REPLICA_RETRY_AFTER_SECONDS = 5;

/** The gateway's own answer to a request it does not forward. */
export interface AdmissionRefusal {
  status: 429 | 503;
  message: string;
  /** Seconds, for `Retry-After`. */
  retryAfter: number;
}

/**
 * Let through, or refused. A request held for a replica (which may not listen yet) has
 * `heldUntil`, and `settled` to call once its replica answered or it gave up: until then it keeps
 * the replica wanted.
 */
export type Admission =
  | { service: GatewayService; heldUntil?: number; settled?: () => void }
  | { refusal: AdmissionRefusal };

export function answerRefusal(response: ServerResponse, refusal: AdmissionRefusal): void {
  response.setHeader('retry-after', String(refusal.retryAfter));
  answerJson(response, refusal.status, refusal.message);
}

/** The refusal on an upgrade's socket: a bare HTTP answer. */
export function refuseUpgrade(socket: Duplex, refusal: AdmissionRefusal): void {
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nretry-after: ${refusal.retryAfter}\r\ncontent-length: 0\r\n\r\n`,
  );
}

/** Aborts when `stream` (the client's response or socket) closes: a held request stops waiting. */
export function closeSignal(stream: ServerResponse | Duplex): AbortSignal {
  const closed = new AbortController();
  stream.once('close', () => closed.abort());
  return closed.signal;
}

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
   * The service as it is when the request may go to one of its replicas, or the gateway's own
   * answer (429 past a rate limit, 503 without a replica). `left` aborts when the client leaves.
   */
  async admit(service: GatewayService, request: IncomingMessage, left: AbortSignal): Promise<Admission> {
    const retryAfter = this.#limits.retryAfter(service, request);
    if (retryAfter !== null) {
      return {
        refusal: {
          status: 429,
          message: `Too many requests to service ${service.run_name}; retry later`,
          retryAfter,
        },
      };
    }
    this.stats.record(service.run_id);
    let current: GatewayService | null = service;
    if (service.replicas.length === 0 && service.scales_from_zero) {
      const heldUntil = Date.now() + this.#waitMs;
      const wait = this.stats.waitStarted(service.run_id, { until: heldUntil, signal: left });
      current = await this.#waits.waitForReplica(service.hostname, this.#lookup, this.#waitMs, left);
      if (current && current.replicas.length > 0) return { service: current, heldUntil, settled: wait.done };
      wait.done();
    }
    if (!current || current.replicas.length === 0) {
      return {
        refusal: {
          status: 503,
          message: `Service ${service.run_name} has no ready replica`,
          retryAfter: NO_REPLICA_RETRY_AFTER_SECONDS,
        },
      };
    }
    return { service: current };
  }
}
