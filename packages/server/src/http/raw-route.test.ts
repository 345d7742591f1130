/** Raw routes: prefixes given whole to their function, beside the JSON routes. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { requestAuthentication } from '../accounts/request-authentication.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { HttpError } from './error-mapping.js';
import { createHttpHandler } from './http-handler.js';
import { defineRawRoute, formatResponseHead, matchRawRoute } from './raw-route.js';
import { defineRoute } from './route.js';
import { receiveUntil, requestUpgrade } from './upgrade-request.test.helpers.js';

const echoRoute = defineRawRoute({
  pathPrefix: '/raw/echo',
  summary: 'Echoes method, target and body',
  async handle({ request, response }) {
    if (request.url?.endsWith('/fail')) throw new HttpError(503, 'not yet', 'service_unavailable');
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`${request.method} ${request.url} ${Buffer.concat(chunks).toString()}`);
  },
});
const deeperRoute = defineRawRoute({
  pathPrefix: '/raw/echo/deeper/',
  summary: 'A longer prefix',
  async handle({ response }) {
    response.end('deeper');
  },
});

/** Upgrades to a protocol that echoes raw bytes; `/busy` and `/broken` fail before and during the answer. */
const tunnelRoute = defineRawRoute({
  pathPrefix: '/raw/tunnel',
  summary: 'Plain requests and upgrades',
  async handle({ response }) {
    response.end('plain');
  },
  async upgrade({ request, socket, head, setErrorHeader }) {
    if (request.url?.endsWith('/busy')) {
      setErrorHeader('Retry-After', '5');
      throw new HttpError(503, 'not yet', 'service_unavailable');
    }
    if (request.url?.endsWith('/broken')) {
      socket.write('HTTP/1.1 101 Switching Protocols\r\n');
      throw new Error('failed mid-answer');
    }
    socket.write(formatResponseHead(101, undefined, { connection: 'Upgrade', upgrade: 'echo' }));
    socket.write(head);
    socket.pipe(socket);
  },
});

describe('raw routes', () => {
  it('match the prefix itself or below it, the longest prefix first', () => {
    const routes = [echoRoute, deeperRoute];
    expect(matchRawRoute(routes, '/raw/echo')).toBe(echoRoute);
    expect(matchRawRoute(routes, '/raw/echo/a/b')).toBe(echoRoute);
    expect(matchRawRoute(routes, '/raw/echoes')).toBeUndefined();
    expect(matchRawRoute(routes, '/raw/echo/deeper')).toBe(deeperRoute);
    expect(matchRawRoute(routes, '/raw/echo/deeper/x')).toBe(deeperRoute);
  });

  it('write an answer head for a bare socket, one line per header value', () => {
    expect(formatResponseHead(101, undefined, { upgrade: 'websocket', 'set-cookie': ['a=1', 'b=2'] })).toBe(
      'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n\r\n',
    );
    expect(formatResponseHead(404, 'Gone Fishing', { 'content-length': 0 })).toBe(
      'HTTP/1.1 404 Gone Fishing\r\ncontent-length: 0\r\n\r\n',
    );
  });

  describe('in the HTTP handler', () => {
    let testApp: TestApp;
    let server: Server;
    let url: string;
    const logged: string[] = [];

    beforeAll(async () => {
      testApp = await createTestApp({ dialect: 'sqlite', routes: [] });
      const jsonRoutes = [
        defineRoute({
          method: 'POST',
          path: '/api/test/ping',
          summary: 'A JSON route beside the raw ones',
          auth: 'none',
          response: z.object({ pong: z.boolean() }),
          handler: async () => ({ pong: true }),
        }),
      ];
      const handler = createHttpHandler(testApp.app, jsonRoutes, {
        authentication: requestAuthentication(testApp.app),
        rawRoutes: [echoRoute, deeperRoute, tunnelRoute],
        logError: (message) => logged.push(message),
      });
      server = createServer(handler);
      server.on('upgrade', handler.upgrade);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      await new Promise((resolve) => server?.close(resolve));
      await testApp?.close();
    });

    it('gives any method and a non-JSON body to the raw route, untouched', async () => {
      const put = await fetch(`${url}/raw/echo/a%20b?x=1`, { method: 'PUT', body: 'not json' });
      expect(await put.text()).toBe('PUT /raw/echo/a%20b?x=1 not json');
      expect(await (await fetch(`${url}/raw/echo/deeper/x`)).text()).toBe('deeper');
    });

    it('maps what a raw route throws to the one error shape, and leaves JSON routes alone', async () => {
      const failed = await fetch(`${url}/raw/echo/fail`);
      expect(failed.status).toBe(503);
      expect(await failed.json()).toEqual({ detail: [{ msg: 'not yet', code: 'service_unavailable' }] });
      const ping = await fetch(`${url}/api/test/ping`, { method: 'POST' });
      expect(await ping.json()).toEqual({ pong: true });
      expect((await fetch(`${url}/raw/other`)).status).toBe(404);
    });

    it('gives upgrades to the raw route that takes them, and plain requests to its handle', async () => {
      const upgraded = await requestUpgrade(`${url}/raw/tunnel/x`);
      if (upgraded.kind !== 'switched') throw new Error(`not switched: ${upgraded.response.statusCode}`);
      try {
        expect(upgraded.response.headers.upgrade).toBe('echo');
        upgraded.socket.write('ping');
        expect(await receiveUntil(upgraded.socket, 'ping', upgraded.head)).toBe('ping');
      } finally {
        upgraded.socket.destroy();
      }
      expect(await (await fetch(`${url}/raw/tunnel/x`)).text()).toBe('plain');
    });

    it('answers 404 on the socket where no raw route takes upgrades', async () => {
      for (const path of ['/raw/echo/x', '/api/test/ping', '/raw/other']) {
        const answer = await requestUpgrade(`${url}${path}`);
        if (answer.kind !== 'answered') throw new Error(`${path} switched protocols`);
        expect(answer.response.statusCode).toBe(404);
        expect(answer.response.headers['content-type']).toBe('application/json');
        expect(JSON.parse(answer.body)).toEqual({
          detail: [{ msg: `Not found: ${path} takes no protocol upgrade`, code: 'not_found' }],
        });
      }
    });

    it('maps what an upgrade throws to the one error shape on the socket, with its headers', async () => {
      const answer = await requestUpgrade(`${url}/raw/tunnel/busy`);
      if (answer.kind !== 'answered') throw new Error('switched protocols');
      expect(answer.response.statusCode).toBe(503);
      expect(answer.response.headers['retry-after']).toBe('5');
      expect(JSON.parse(answer.body)).toEqual({ detail: [{ msg: 'not yet', code: 'service_unavailable' }] });
    });

    it('cuts the connection when an upgrade fails after writing, instead of a second answer', async () => {
      logged.length = 0;
      await expect(requestUpgrade(`${url}/raw/tunnel/broken`)).rejects.toThrow();
      expect(logged).toEqual([
        expect.stringContaining('GET /raw/tunnel/broken (upgrade): Error: failed mid-answer'),
      ]);
    });
  });
});
