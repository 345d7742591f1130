/**
 * dstack's `rate_limits`, one implementation for the server's service proxy and the gateway
 * agent: per client key (its IP address, or a header's
 * value) and path prefix (the longest matching one), a token bucket of `burst + 1` requests
 * refilled at `rps`, as nginx's `limit_req burst=N nodelay` on dstack's gateway. A request past
 * the limit is answered 429 with `Retry-After`: the whole seconds until one more is allowed.
 *
 * Prefixes match the normalised path (normalised-request-path.ts), as nginx's `location`s match
 * the normalised URI, so no spelling of a path escapes its limit. The request itself goes to the
 * replica as the client wrote it (dstack's nginx `proxy_pass` has no URI part, which forwards
 * the request line unchanged).
 */
import type { ServiceConfiguration } from '../configuration/service-configuration.js';
import { normaliseRequestPath } from './normalised-request-path.js';

export type ServiceRateLimit = ServiceConfiguration['rate_limits'][number];
type RateLimit = ServiceRateLimit;

/** What a limit reads of a request (node's `IncomingMessage` fits): the client's address and its headers. */
export interface RateLimitedRequest {
  headers: Readonly<Record<string, string | string[] | undefined>>;
  socket: { remoteAddress?: string | undefined };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Buckets beyond this many are dropped oldest first, so many clients cannot grow it forever. */
const MAX_BUCKETS = 100_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /** Takes one request from the bucket at `key`; null when allowed, else seconds to wait. */
  take(key: string, limit: Pick<RateLimit, 'rps' | 'burst'>, now = Date.now()): number | null {
    const capacity = limit.burst + 1;
    const bucket = this.buckets.get(key) ?? { tokens: capacity, updatedAt: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * limit.rps);
    bucket.updatedAt = now;
    // Re-inserted so the map's order is least recently used first.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_BUCKETS) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / limit.rps));
  }
}

/**
 * The readings of a request target a limit is looked up by: its normalised path, and, when that
 * holds an encoded slash, the path read with `%2F` as `/` (normalised again). The normaliser
 * keeps `%2F` as data, as RFC 3986 says; but nginx decodes it before matching, and many
 * servers (uvicorn, hence FastAPI and vLLM) route `/v1%2Fembeddings` as `/v1/embeddings`, so a
 * limit on either reading applies.
 */
function limitedPaths(target: string): string[] {
  const path = normaliseRequestPath(target);
  if (!path.includes('%2F')) return [path];
  return [path, normaliseRequestPath(path.replaceAll('%2F', '/'))];
}

/**
 * The limit for a request target (the service's path and query as the client sent them: after
 * the server proxy's prefix, or as the gateway got it): the longest prefix matching one of its
 * readings (`limitedPaths`), prefixes normalised alike.
 */
export function rateLimitFor(limits: readonly RateLimit[], target: string): RateLimit | null {
  const paths = limitedPaths(target);
  let best: RateLimit | null = null;
  let bestLength = -1;
  for (const limit of limits) {
    // A prefix ending in `/` keeps it: `/v1/` does not match `/v1`.
    const prefix = normaliseRequestPath(limit.prefix);
    if (prefix.length > bestLength && paths.some((path) => path.startsWith(prefix))) {
      best = limit;
      bestLength = prefix.length;
    }
  }
  return best;
}

/** The client's key for `limit`; null (not limited, as nginx skips empty keys) when a keyed header is absent. */
export function rateLimitKey(limit: RateLimit, request: RateLimitedRequest): string | null {
  if (limit.key.type === 'ip_address') return request.socket.remoteAddress ?? '';
  const value = request.headers[limit.key.header.toLowerCase()];
  const text = Array.isArray(value) ? value.join(',') : value;
  return text === undefined || text === '' ? null : text;
}

/**
 * Seconds the client must wait before `target` (path and query, as sent) of `runId` is served
 * again, or null when the request is within the service's limits (or it has none).
 */
export function rateLimited(
  limiter: RateLimiter,
  /** The service's own buckets: its run id. */
  runId: string,
  limits: readonly RateLimit[],
  target: string,
  request: RateLimitedRequest,
): number | null {
  const limit = rateLimitFor(limits, target);
  if (!limit) return null;
  const key = rateLimitKey(limit, request);
  if (key === null) return null;
  return limiter.take(`${runId}\u0000${limit.prefix}\u0000${key}`, limit);
}
