/** Raw routes: prefixes given whole to their function, beside the JSON routes. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestApp, type TestApp } from '../testing/test-app.js';
import { HttpError } from './error-mapping.js';
import { createHttpHandler } from './http-handler.js';
import { defineRawRoute, matchRawRoute } from './raw-route.js';
import { defineRoute } from './route.js';

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

describe('raw routes', () => {
  it('match the prefix itself or below it, the longest prefix first', () => {
    const routes = [echoRoute, deeperRoute];
    expect(matchRawRoute(routes, '/raw/echo')).toBe(echoRoute);
    expect(matchRawRoute(routes, '/raw/echo/a/b')).toBe(echoRoute);
    expect(matchRawRoute(routes, '/raw/echoes')).toBeUndefined();
    expect(matchRawRoute(routes, '/raw/echo/deeper')).toBe(deeperRoute);
    expect(matchRawRoute(routes, '/raw/echo/deeper/x')).toBe(deeperRoute);
  });

  describe('in the HTTP handler', () => {
    let testApp: TestApp;
    let server: Server;
    let url: string;

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
      const handler = createHttpHandler(testApp.app, jsonRoutes, { rawRoutes: [echoRoute, deeperRoute] });
      server = createServer(handler);
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
  });
});
