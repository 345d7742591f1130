import { describe, expect, it } from 'vitest';
import { normaliseRequestPath } from './normalised-request-path.js';

describe('normaliseRequestPath', () => {
  it.each([
    // Already normal.
    ['/', '/'],
    ['/limited', '/limited'],
    ['/v1/chat/completions', '/v1/chat/completions'],
    ['/v1/', '/v1/'],
    // The query (and a fragment) is not part of the path.
    ['/limited?x=1', '/limited'],
    ['/limited?next=/../admin', '/limited'],
    ['/limited#top', '/limited'],
    ['?x=1', '/'],
    ['', '/'],
    // Unreserved characters decoded, in either case of hex digit.
    ['/%6cimited', '/limited'],
    ['/%6Cimited', '/limited'],
    ['/v1/%65mbeddings', '/v1/embeddings'],
    ['/%41%7a%30%2D%2e%5F%7E', '/Az0-._~'],
    // Everything else stays encoded, hex digits in upper case: `%2F` is data, not a separator.
    ['/a%2Fb', '/a%2Fb'],
    ['/a%2fb', '/a%2Fb'],
    ['/v1%2Fembeddings', '/v1%2Fembeddings'],
    ['/%2e%2e%2flimited', '/..%2Flimited'],
    ['/a%20b', '/a%20b'],
    ['/%c3%a9t%c3%a9', '/%C3%A9t%C3%A9'],
    ['/%25', '/%25'],
    ['/%256c', '/%256c'],
    ['/%00', '/%00'],
    // An invalid percent-encoding stays as it is.
    ['/%zz/%4', '/%zz/%4'],
    ['/100%', '/100%'],
    // Duplicate slashes merged.
    ['//limited', '/limited'],
    ['/a///b//', '/a/b/'],
    ['//', '/'],
    // Dot segments resolved, after decoding.
    ['/./limited', '/limited'],
    ['/x/../limited', '/limited'],
    ['/%2e/limited', '/limited'],
    ['/%2e%2e/limited', '/limited'],
    ['/x/.%2E/limited', '/limited'],
    ['/a/b/../../c', '/c'],
    ['/a//../b', '/b'],
    // `..` never goes above the root.
    ['/../limited', '/limited'],
    ['/../../../etc/passwd', '/etc/passwd'],
    ['/..', '/'],
    // Trailing dot segments leave a trailing slash; dots inside a name are not dot segments.
    ['/limited/.', '/limited/'],
    ['/limited/..', '/'],
    ['/a/b/..', '/a/'],
    ['/limited.', '/limited.'],
    ['/limited/...', '/limited/...'],
    ['/limited/..%2F', '/limited/..%2F'],
    ['/.hidden', '/.hidden'],
    // A target that is not origin-form is read as a path (the proxies refuse it before this).
    ['limited', '/limited'],
  ])('%j → %j', (target, path) => {
    expect(normaliseRequestPath(target)).toBe(path);
  });

  it('gives one spelling to every way of writing a path', () => {
    const spellings = [
      '/limited',
      '/%6cimited',
      '//limited',
      '/./limited',
      '/x/../limited',
      '/%2E%2E/limited',
    ];
    expect(new Set(spellings.map(normaliseRequestPath))).toEqual(new Set(['/limited']));
  });
});
