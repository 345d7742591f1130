/**
 * A raw route: a path prefix whose requests the handler gives, untouched, to
 * one function. For what the JSON routes of route.ts cannot carry: any method,
 * bodies that are not JSON and must stream both ways, protocol upgrades such as
 * WebSocket (the service proxy). The handler reads no body, checks no auth and
 * validates nothing for them; the raw handler does its own. An error it throws
 * before writing the answer is mapped to the one error shape like any route's,
 * on the bare socket for an upgrade.
 */
import { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { AppContext } from '../context.js';

export interface RawRequestContext {
  app: AppContext;
  request: IncomingMessage;
  response: ServerResponse;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

/** A request asking to switch protocols (`Connection: Upgrade`, `Upgrade: websocket`). */
export interface RawUpgradeContext {
  app: AppContext;
  request: IncomingMessage;
  /**
   * The client's connection, which node:http no longer watches: the handler writes the whole
   * answer on it (see `formatResponseHead`) and owns it from then on. The HTTP handler destroys
   * it when the server shuts down.
   */
  socket: Socket;
  /** Bytes the client sent after the request's head, before the handler took the socket. */
  head: Buffer;
  /** Aborted when the client's connection closes. */
  signal: AbortSignal;
  /** Adds a header to the error answer written for what the handler throws, as `response.setHeader` does for requests. */
  setErrorHeader(name: string, value: string): void;
}

export interface RawRouteDefinition {
  /**
   * Requests whose path is this prefix or starts with it followed by `/` go to `handle`,
   * whatever their method, e.g. `/proxy/services`.
   */
  pathPrefix: string;
  /** One line for the documentation (raw routes are not in the OpenAPI document). */
  summary: string;
  /** Answers the request: writes `response` and resolves once it is done. */
  handle(context: RawRequestContext): Promise<void>;
  /**
   * Answers a protocol upgrade on this prefix; without it, upgrades here are answered 404.
   * Resolves once the answer is written or the connection handed over (a tunnel may stay open
   * after). It must not throw once it has written to the socket: it destroys the socket instead.
   */
  upgrade?(context: RawUpgradeContext): Promise<void>;
}

/** Identity with inference, as `defineRoute`. */
export function defineRawRoute(route: RawRouteDefinition): RawRouteDefinition {
  return route;
}

/** The raw route serving `pathname`, if any; the longest matching prefix wins. */
export function matchRawRoute(
  routes: readonly RawRouteDefinition[],
  pathname: string,
): RawRouteDefinition | undefined {
  let best: RawRouteDefinition | undefined;
  for (const route of routes) {
    const prefix = route.pathPrefix.replace(/\/+$/, '');
    if (pathname !== prefix && !pathname.startsWith(`${prefix}/`)) continue;
    if (!best || prefix.length > best.pathPrefix.replace(/\/+$/, '').length) best = route;
  }
  return best;
}

/**
 * The head of an HTTP/1.1 answer written straight to a socket, as node:http would write it:
 * status line, one line per header value, blank line. For upgrades, which have no `ServerResponse`.
 */
export function formatResponseHead(
  status: number,
  statusMessage: string | undefined,
  headers: OutgoingHttpHeaders,
): string {
  const lines = [`HTTP/1.1 ${status} ${statusMessage ?? STATUS_CODES[status] ?? ''}`];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${item}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}
