/** Shutdown of the HTTP layer: streams end with their last line, stubborn ones are cut after the grace. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestAuthentication } from '../accounts/request-authentication.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { closeHttpServer } from './close-http-server.js';
import { createHttpHandler, type HttpHandler } from './http-handler.js';
import { defineRawRoute, formatResponseHead } from './raw-route.js';
import { defineRoute, type RouteDefinition } from './route.js';
import { receiveUntil, requestUpgrade } from './upgrade-request.test.helpers.js';

/** What the streams did, read by the tests once the server is closed. */
const events: string[] = [];

const routes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/test/polite',
    summary: 'Ends with a last line once the server stops',
    auth: 'none',
    responseContentType: 'application/x-ndjson',
    handler: async ({ app, signal }) => ({
      kind: 'stream',
      chunks: (async function* () {
        try {
          yield '{"n":1}\n';
          await new Promise<void>((resolve) => {
            if (app.signal.aborted) resolve();
            app.signal.addEventListener('abort', () => resolve());
            signal.addEventListener('abort', () => resolve());
          });
          // Work still under way when the server stops (a database query): the server waits for it.
          await delay(20);
          yield '{"end":"server_stopping"}\n';
        } finally {
          events.push('polite ended');
        }
      })(),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/stubborn',
    summary: 'Ignores the server stopping; ends only when its client is gone',
    auth: 'none',
    responseContentType: 'application/x-ndjson',
    handler: async ({ signal }) => ({
      kind: 'stream',
      chunks: (async function* () {
        try {
          yield '{"n":1}\n';
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
          await delay(20);
        } finally {
          events.push('stubborn ended');
        }
      })(),
    }),
  }),
];

/** Upgrades to a tunnel echoing bytes, which stays open until a side closes it. */
const tunnelRoute = defineRawRoute({
  pathPrefix: '/raw/tunnel',
  summary: 'An echo tunnel',
  async handle({ response }) {
    response.end();
  },
  async upgrade({ socket }) {
    socket.write(formatResponseHead(101, undefined, { connection: 'Upgrade', upgrade: 'echo' }));
    socket.pipe(socket);
  },
});

describe('closeHttpServer', () => {
  let testApp: TestApp;
  beforeAll(async () => {
    testApp = await createTestApp({ dialect: 'sqlite', routes: [] });
  });
  afterAll(async () => {
    await testApp?.close();
  });

  /** A server of `routes` whose app signal the test aborts, as `RunningServer.close()` does. */
  async function startServer(): Promise<{
    server: Server;
    handler: HttpHandler;
    stopping: AbortController;
    url: string;
  }> {
    const stopping = new AbortController();
    const app = { ...testApp.app, signal: stopping.signal };
    const handler = createHttpHandler(app, routes, {
      authentication: requestAuthentication(app),
      rawRoutes: [tunnelRoute],
    });
    const server = createServer(handler);
    server.on('upgrade', handler.upgrade);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    return { server, handler, stopping, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  async function openStream(url: string) {
    const response = await fetch(url, { method: 'POST' });
    if (!response.body) throw new Error('no body');
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    return {
      firstChunk: decoder.decode(first.value),
      /** The rest of the answer; rejects when the connection is cut. */
      async rest(): Promise<string> {
        let text = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return text;
          text += decoder.decode(value, { stream: true });
        }
      },
    };
  }

  it('lets open streams write their last line and waits for them before resolving', async () => {
    events.length = 0;
    const { server, handler, stopping, url } = await startServer();
    const stream = await openStream(`${url}/api/test/polite`);
    expect(stream.firstChunk).toBe('{"n":1}\n');

    stopping.abort();
    const closing = closeHttpServer(server, handler, { graceMs: 30_000 });
    expect(await stream.rest()).toBe('{"end":"server_stopping"}\n');
    await closing;
    expect(events).toEqual(['polite ended']);
    expect(server.listening).toBe(false);
    await expect(fetch(`${url}/api/test/polite`, { method: 'POST' })).rejects.toThrow();
  });

  it('cuts streams that do not end within the grace, and waits for their handlers to return', async () => {
    events.length = 0;
    const { server, handler, stopping, url } = await startServer();
    const stubborn = await openStream(`${url}/api/test/stubborn`);
    const polite = await openStream(`${url}/api/test/polite`);
    expect(stubborn.firstChunk).toBe('{"n":1}\n');

    stopping.abort();
    // Settled either way at once, so that the expected rejection is not reported as unhandled.
    const stubbornRest = stubborn.rest().then(
      (text) => ({ cut: false, text }),
      (error: unknown) => ({ cut: true, text: String(error) }),
    );
    const politeRest = polite.rest();
    await closeHttpServer(server, handler, { graceMs: 200 });
    // The stubborn stream's handler finished its pending step before close resolved.
    expect(events.sort()).toEqual(['polite ended', 'stubborn ended']);
    expect(await stubbornRest).toMatchObject({ cut: true });
    expect(await politeRest).toBe('{"end":"server_stopping"}\n');
    await handler.whenIdle();
  });

  it('closes upgraded connections, which node:http no longer tracks, instead of waiting for them', async () => {
    const { server, handler, stopping, url } = await startServer();
    const tunnel = await requestUpgrade(`${url}/raw/tunnel`);
    if (tunnel.kind !== 'switched') throw new Error(`not switched: ${tunnel.response.statusCode}`);
    tunnel.socket.write('ping');
    expect(await receiveUntil(tunnel.socket, 'ping', tunnel.head)).toBe('ping');
    const tunnelClosed = new Promise<void>((resolve) => tunnel.socket.once('close', () => resolve()));

    stopping.abort();
    await closeHttpServer(server, handler, { graceMs: 200 });
    await tunnelClosed;
    expect(server.listening).toBe(false);
  });
});
