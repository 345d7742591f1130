import { describe, expect, it } from 'vitest';
import { isResourceMissing, isTokenRejected, parseErrorDetails } from './api-errors.js';

describe('error answers as dstack and this server send them', () => {
  it('reads a rejected token from 401, or from 403 with code not_authenticated (as dstack answers)', () => {
    const notAuthenticated = parseErrorDetails(
      403,
      JSON.stringify({ detail: [{ msg: 'Invalid token', code: 'not_authenticated' }] }),
    );
    expect(isTokenRejected(403, notAuthenticated)).toBe(true);
    expect(isTokenRejected(401, parseErrorDetails(401, '{"detail":"Unauthorized"}'))).toBe(true);
    const forbidden = parseErrorDetails(
      403,
      JSON.stringify({ detail: [{ msg: 'Access denied', code: 'forbidden' }] }),
    );
    expect(isTokenRejected(403, forbidden)).toBe(false);
  });

  it("reads a missing resource from dstack's 400 resource_not_exists, not from a route's 404", () => {
    const missing = parseErrorDetails(
      400,
      JSON.stringify({ detail: [{ msg: 'Run nope not found', code: 'resource_not_exists' }] }),
    );
    expect(isResourceMissing(missing)).toBe(true);
    const noRoute = parseErrorDetails(
      404,
      JSON.stringify({ detail: [{ msg: 'Not found: /x', code: 'not_found' }] }),
    );
    expect(isResourceMissing(noRoute)).toBe(false);
  });
});
