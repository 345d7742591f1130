/**
 * A service's `rate_limits` on the gateway (dstack enforces them with nginx's `limit_req` there):
 * the limiter the server's proxy uses, per client (its address as the gateway sees it, or a
 * header's value) and longest prefix of the normalised path.
 */
import type { IncomingMessage } from 'node:http';
import { type GatewayService, RateLimiter, rateLimited } from '@dstack/core/agent-protocol';

export class GatewayRateLimits {
  readonly #limiter = new RateLimiter();

  /** Seconds the client must wait before it is served again (429), or null when within the limits. */
  retryAfter(service: GatewayService, request: IncomingMessage): number | null {
    if (service.rate_limits.length === 0) return null;
    const key = service.run_id || `${service.project}/${service.run_name}`;
    // The path as sent: the limiter matches its normalised form, as the server's proxy does.
    return rateLimited(this.#limiter, key, service.rate_limits, request.url ?? '/', request);
  }
}
