/**
 * The path of a request as a rule about paths must see it (a service's `rate_limits`): one
 * spelling for every way of writing the same path, as nginx matches `location`s on the
 * normalised URI rather than on what the client sent. Without it `/%6cimited`, `//limited` and
 * `/./limited` each escape a limit on `/limited` while the replica serves them as `/limited`.
 *
 * RFC 3986 §6.2.2 (syntax-based normalisation), plus nginx's `merge_slashes`:
 * - the query (and a fragment, which no client should send) is not part of the path;
 * - percent-encoded unreserved characters (letters, digits, `-._~`) are decoded; every other
 *   percent-encoding stays, its hex digits in upper case: `%2F` is data inside a segment, not a
 *   separator, so `/a%2Fb` is one segment (RFC 3986 §2.2); an invalid `%` stays as it is;
 * - empty segments are dropped (`//` is `/`), then `.` and `..` are resolved, `..` never above
 *   the root; decoding comes first, so `%2e%2e` is `..`;
 * - a path ending in `/`, `/.` or `/..` keeps a trailing slash.
 */

/** RFC 3986 §2.3: the characters whose percent-encoding is the same as the character itself. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const PERCENT_ENCODED = /%([0-9A-Fa-f]{2})/g;

/** One segment with unreserved characters decoded and other percent-encodings in upper case. */
function normaliseSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  return segment.replace(PERCENT_ENCODED, (_encoded, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
}

/**
 * The normalised path of an origin-form request target (`/path?query`), always starting with `/`.
 * A target that is not origin-form is read as a path all the same; the proxies refuse those.
 */
export function normaliseRequestPath(target: string): string {
  const end = target.search(/[?#]/);
  const rawPath = end === -1 ? target : target.slice(0, end);
  const rawSegments = rawPath.split('/').map(normaliseSegment);
  const segments: string[] = [];
  for (const segment of rawSegments) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const last = rawSegments[rawSegments.length - 1];
  const trailingSlash = segments.length > 0 && (last === '' || last === '.' || last === '..');
  return `/${segments.join('/')}${trailingSlash ? '/' : ''}`;
}
