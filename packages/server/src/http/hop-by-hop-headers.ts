/**
 * Hop-by-hop headers (RFC 9110 §7.6.1: `Connection`, the ones it names, `Keep-Alive`,
 * `Transfer-Encoding`, `Upgrade`, …) describe one connection and are not passed on by a proxy;
 * Node frames each side's body itself. A protocol upgrade is the exception: the client must
 * see `Connection: Upgrade` and `Upgrade` on the upstream's 101 for both ends to switch.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** RFC 9110 §7.6.1 and the older proxy headers that are hop-by-hop in practice. */
const HOP_BY_HOP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers a connection names as its own in `Connection: a, b`. */
function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  const tokens = new Set<string>();
  for (const token of (Array.isArray(value) ? value.join(',') : (value ?? '')).split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') tokens.add(name);
  }
  return tokens;
}

/** `headers` without the hop-by-hop ones (Node gives names in lower case). */
export function withoutHopByHopHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = connectionTokens(headers);
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP_HEADERS.has(name) || named.has(name)) continue;
    kept[name] = value;
  }
  return kept;
}

/** An upstream's 101 headers as the client gets them: without hop-by-hop ones but the switch itself. */
export function switchingProtocolsHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const downstream = withoutHopByHopHeaders(headers);
  if (headers.upgrade === undefined) return downstream;
  return { ...downstream, connection: 'Upgrade', upgrade: headers.upgrade };
}
