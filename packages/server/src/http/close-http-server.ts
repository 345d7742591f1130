/**
 * Stops an HTTP server without cutting answers short: streams get a moment to write their
 * last line (they watch `app.signal`, which the caller aborts first), then every connection
 * is closed, upgraded ones (WebSocket tunnels) included, and the handlers that were cut get
 * to return, so nothing is still querying when the database closes afterwards.
 */
import type { Server } from 'node:http';
import type { HttpHandler } from './http-handler.js';

/** Default `graceMs`: 1 500 ms. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 1_500;

export interface CloseHttpServerOptions {
  /**
   * Milliseconds open answers get to finish before their connections are destroyed, and
   * again for cut handlers to return. Default 1 500.
   */
  graceMs?: number;
}

/** Resolves true when `promise` settles within `milliseconds`, false otherwise. */
async function settlesWithin(promise: Promise<unknown>, milliseconds: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), milliseconds);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops accepting connections, waits up to `graceMs` for the requests being answered, then
 * destroys the remaining connections, upgraded ones included, and waits up to `graceMs` more
 * for their handlers.
 */
export async function closeHttpServer(
  server: Server,
  handler: HttpHandler,
  options: CloseHttpServerOptions = {},
): Promise<void> {
  const graceMs = options.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await settlesWithin(handler.whenIdle(), graceMs);
  // Keep-alive connections that went idle after the answers ended, and answers that did not end in time.
  server.closeAllConnections();
  // Tunnels end only when one side closes them: `closed` would wait for them forever.
  handler.destroyUpgradedConnections();
  await settlesWithin(handler.whenIdle(), graceMs);
  await closed;
}
