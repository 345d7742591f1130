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

  it('matches the normalised path, so no spelling of a path escapes its limit', () => {
    const limits = [limit('/', 100), limit('/limited', 1), limit('/v1/embeddings', 1)];
    for (const target of [
      '/limited',
      '/%6cimited',
      '//limited',
      '/./limited',
      '/x/../limited',
      '/limited?a=1',
    ]) {
      expect(rateLimitFor(limits, target)?.prefix, target).toBe('/limited');
    }
    expect(rateLimitFor(limits, '/v1/%65mbeddings')?.prefix).toBe('/v1/embeddings');
    // Out of the prefix once normalised, however it starts.
    expect(rateLimitFor(limits, '/limited/../other')?.prefix).toBe('/');
    // The query is not the path.
    expect(rateLimitFor(limits, '/other?/limited')?.prefix).toBe('/');
  });

  it('applies a limit on the path read with an encoded slash as a slash too', () => {
    const limits = [limit('/', 100), limit('/v1/embeddings', 1)];
    expect(rateLimitFor(limits, '/v1%2Fembeddings')?.prefix).toBe('/v1/embeddings');
    expect(rateLimitFor(limits, '/v1%2fembeddings')?.prefix).toBe('/v1/embeddings');
    expect(rateLimitFor(limits, '/x%2F..%2Fv1/embeddings')?.prefix).toBe('/v1/embeddings');
    // Decoded once only: `%252F` is a `%` and `2F`.
    expect(rateLimitFor(limits, '/v1%252Fembeddings')?.prefix).toBe('/');
  });

  it('normalises prefixes alike, keeping a trailing slash', () => {
    expect(rateLimitFor([limit('/v1/%65mbeddings', 1)], '/v1/embeddings')?.prefix).toBe('/v1/%65mbeddings');
    expect(rateLimitFor([limit('/v1/', 1)], '/v1')).toBeNull();
    expect(rateLimitFor([limit('/v1/', 1)], '/v1//models')?.prefix).toBe('/v1/');
  });

  it('takes one bucket for every spelling of a path', () => {
    const limiter = new RateLimiter();
    const limits = [limit('/limited', 1 / 60)];
    const request = { headers: {}, socket: { remoteAddress: '10.0.0.1' } };
    expect(rateLimited(limiter, 'run', limits, '/limited', request)).toBeNull();
    for (const target of ['/%6cimited', '//limited', '/./limited']) {
      expect(rateLimited(limiter, 'run', limits, target, request), target).not.toBeNull();
    }
  });
});
