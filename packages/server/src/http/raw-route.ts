/**
 * A raw route: a path prefix whose requests the handler gives, untouched, to
 * one function. For what the JSON routes of route.ts cannot carry: any method,
 * bodies that are not JSON and must stream both ways (the service proxy).
 * The handler reads no body, checks no auth and validates nothing for them;
 * the raw handler does its own. An error it throws before writing the answer
 * is mapped to the one error shape like any route's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../context.js';

export interface RawRequestContext {
  app: AppContext;
  request: IncomingMessage;
  response: ServerResponse;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
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
