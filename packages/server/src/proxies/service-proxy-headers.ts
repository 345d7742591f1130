/**
 * Headers across the service proxy. Hop-by-hop headers are not passed on (see
 * http/hop-by-hop-headers.ts) except on a protocol upgrade (WebSocket): the replica must see
 * `Connection: Upgrade` and `Upgrade` for both ends to switch. The replica learns who asked
 * through `X-Real-IP` and `X-Forwarded-*`, and where it is mounted through `X-Forwarded-Prefix`.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { withoutHopByHopHeaders } from '../http/hop-by-hop-headers.js';
import { withSandboxPolicy } from '../http/origin-isolation.js';

export interface ForwardedRequest {
  /** The client's address as the server's socket saw it. */
  clientAddress: string | undefined;
  /** `https` when the server's socket is TLS, else `http`. */
  protocol: 'http' | 'https';
  /** Where the service is mounted on this server, e.g. `/proxy/services/main/app`. */
  prefix: string;
  /**
   * Whether the replica may see the client's `Authorization` header. False when dstack
   * checked it, or when it carries a dstack user's token: that is none of the service's business.
   */
  keepAuthorization: boolean;
}

/**
 * The headers sent to the replica: the client's end-to-end headers, `Host` left for the
 * client library to set to the replica's address (the original one goes in
 * `X-Forwarded-Host`), the client's address appended to `X-Forwarded-For` and set as
 * `X-Real-IP` (the peer's, as dstack's gateway sets it: a client's own is not passed on). A proxy in front
 * of this server may already have set `X-Forwarded-Host` and `X-Forwarded-Proto`: those are
 * kept, as they name what the user actually called.
 */
export function upstreamRequestHeaders(
  headers: IncomingHttpHeaders,
  forwarded: ForwardedRequest,
): OutgoingHttpHeaders {
  const upstream = withoutHopByHopHeaders(headers);
  delete upstream.host;
  // This server already answered `Expect: 100-continue`; the replica gets the body regardless.
  delete upstream.expect;
  if (!forwarded.keepAuthorization) delete upstream.authorization;
  const previousFor = headers['x-forwarded-for'];
  const chain = [
    ...(Array.isArray(previousFor) ? previousFor : previousFor ? [previousFor] : []),
    ...(forwarded.clientAddress ? [forwarded.clientAddress] : []),
  ];
  if (chain.length > 0) upstream['x-forwarded-for'] = chain.join(', ');
  delete upstream['x-real-ip'];
  if (forwarded.clientAddress) upstream['x-real-ip'] = forwarded.clientAddress;
  upstream['x-forwarded-host'] = headers['x-forwarded-host'] ?? headers.host ?? '';
  if (upstream['x-forwarded-host'] === '') delete upstream['x-forwarded-host'];
  upstream['x-forwarded-proto'] = headers['x-forwarded-proto'] ?? forwarded.protocol;
  upstream['x-forwarded-prefix'] = forwarded.prefix;
  return upstream;
}

/**
 * The replica's answer headers as the client gets them: without the hop-by-hop ones, under the
 * sandbox policy that keeps a service's page out of the web console's origin (whatever the
 * replica sends; see http/origin-isolation.ts).
 */
export function downstreamResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return withSandboxPolicy(withoutHopByHopHeaders(headers));
}

/**
 * The headers of an upgrade request sent to the replica: as `upstreamRequestHeaders`, plus the
 * client's `Upgrade` and the `Connection: Upgrade` asking for it. `Sec-WebSocket-*` are
 * end-to-end and pass as they are.
 */
export function upgradeRequestHeaders(
  headers: IncomingHttpHeaders,
  forwarded: ForwardedRequest,
): OutgoingHttpHeaders {
  const upstream = upstreamRequestHeaders(headers, forwarded);
  if (headers.upgrade === undefined) return upstream;
  return { ...upstream, connection: 'Upgrade', upgrade: headers.upgrade };
}
