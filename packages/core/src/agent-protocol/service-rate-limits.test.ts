import { describe, expect, it } from 'vitest';
import { RateLimiter, rateLimited, rateLimitFor } from './service-rate-limits.js';

const limit = (prefix: string, rps: number, burst = 0) => ({
  prefix,
  rps,
  burst,
  key: { type: 'ip_address' as const },
});

describe('rate limits', () => {
  it('allows burst + 1 at once, then one per 1/rps, saying how long to wait', () => {
    const limiter = new RateLimiter();
    const t = 1_000_000;
    expect(limiter.take('k', { rps: 0.5, burst: 1 }, t)).toBeNull();
    expect(limiter.take('k', { rps: 0.5, burst: 1 }, t)).toBeNull();
    expect(limiter.take('k', { rps: 0.5, burst: 1 }, t)).toBe(2);
    expect(limiter.take('k', { rps: 0.5, burst: 1 }, t + 1000)).toBe(1);
    expect(limiter.take('k', { rps: 0.5, burst: 1 }, t + 2000)).toBeNull();
    // Another key has its own bucket.
    expect(limiter.take('other', { rps: 0.5, burst: 1 }, t)).toBeNull();
  });

  it('takes the longest matching prefix, and keys by a header when told (absent: not limited)', () => {
    const limits = [limit('/', 100), limit('/v1/chat', 1)];
    expect(rateLimitFor(limits, '/v1/chat/completions')?.prefix).toBe('/v1/chat');
    expect(rateLimitFor(limits, '/health')?.prefix).toBe('/');
    expect(rateLimitFor([limit('/v1', 1)], '/health')).toBeNull();

    const byHeader = [{ ...limit('/', 1), key: { type: 'header' as const, header: 'X-Api-Key' } }];
    const request = (headers: Record<string, string>) => ({
      headers,
      socket: { remoteAddress: '127.0.0.1' },
    });
    const limiter = new RateLimiter();
    expect(rateLimited(limiter, 'run', byHeader, '/', request({ 'x-api-key': 'a' }))).toBeNull();
    expect(rateLimited(limiter, 'run', byHeader, '/', request({ 'x-api-key': 'a' }))).toBe(1);
    expect(rateLimited(limiter, 'run', byHeader, '/', request({ 'x-api-key': 'b' }))).toBeNull();
    expect(rateLimited(limiter, 'run', byHeader, '/', request({}))).toBeNull();
  });
});
