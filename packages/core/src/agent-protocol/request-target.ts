/**
 * The request targets a proxy of services passes on (the gateway agent, the server's service
 * proxy). A proxy sends a client's request to a replica's own host and port with the target as a
 * path, so it accepts only the origin form (RFC 9112 §3.2.1): a path, with its query, that starts
 * with a single `/`. Every other form names another host, or nothing a replica serves: the
 * absolute form (`http://host:port/…`, which a URL parser, or a proxy before the replica, takes
 * as the host to reach), the authority form (`host:port`, CONNECT's), the asterisk form (`*`),
 * and a path starting with `//` or `/\` (a URL parser resolves `//host:port/…` as a host and
 * path, and WHATWG URLs read `\` as `/`). The proxies answer those 400 before anything else.
 */

/** The longest piece of a refused target quoted back in the refusal. */
const QUOTED_TARGET_LENGTH = 100;

/**
 * Why `target` is not an origin-form request target a proxy may pass on to a replica, or null
 * when it is one.
 */
export function requestTargetRefusal(target: string | undefined): string | null {
  if (target?.startsWith('/') && target[1] !== '/' && target[1] !== '\\') {
    return null;
  }
  const quoted = JSON.stringify((target ?? '').slice(0, QUOTED_TARGET_LENGTH));
  return `The request target must be a path that starts with a single "/" (origin-form), not ${quoted}: this proxy sends requests only to the service's replicas`;
}
