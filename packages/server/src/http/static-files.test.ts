/** The web console's files at `/`: content types, caching, app routes, and the API left alone. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { requestAuthentication } from '../accounts/request-authentication.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { createHttpHandler } from './http-handler.js';
import { CONSOLE_POLICY, SANDBOX_POLICY } from './origin-isolation.js';
import { defineRawRoute } from './raw-route.js';
import { defineRoute } from './route.js';
import { loadStaticSite } from './static-files.js';
import { loadWebConsole } from './web-console.js';

const INDEX = '<!doctype html><title>console</title>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

describe('the web console files', () => {
  let build: string;
  let testApp: TestApp;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    build = mkdtempSync(join(tmpdir(), 'dstack-web-build-'));
    mkdirSync(join(build, 'assets'));
    writeFileSync(join(build, 'index.html'), INDEX);
    writeFileSync(join(build, 'assets', 'index-AbC123.js'), SCRIPT);
    writeFileSync(join(build, 'assets', 'index-AbC123.css'), 'body{}');
    writeFileSync(join(build, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    // A build that holds an api/ folder must not shadow the API.
    mkdirSync(join(build, 'api'));
    writeFileSync(join(build, 'api', 'ping'), 'shadow');

    testApp = await createTestApp({ dialect: 'sqlite', routes: [] });
    const routes = [
      defineRoute({
        method: 'POST',
        path: '/api/test/ping',
        summary: 'A JSON route',
        auth: 'none',
        response: z.object({ pong: z.boolean() }),
        handler: async () => ({ pong: true }),
      }),
    ];
    const proxy = defineRawRoute({
      pathPrefix: '/proxy/services',
      summary: 'A proxy',
      async handle({ response }) {
        response.end('proxied');
      },
    });
    const handler = createHttpHandler(testApp.app, routes, {
      authentication: requestAuthentication(testApp.app),
      rawRoutes: [proxy],
      staticSite: loadStaticSite(build),
    });
    server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await testApp?.close();
    rmSync(build, { recursive: true, force: true });
  });

  it('serves index.html at / and at the app routes, revalidated each time', async () => {
    for (const path of ['/', '/runs', '/runs/main/my-run']) {
      const response = await fetch(`${url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toBe(INDEX);
    }
  });

  it('caches hashed assets for a year, with their content types, gzip and ETag', async () => {
    const script = await fetch(`${url}/assets/index-AbC123.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(script.headers.get('content-encoding')).toBe('gzip');
    expect(await script.text()).toBe(SCRIPT);

    const raw = await fetch(`${url}/assets/index-AbC123.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(raw.headers.get('content-encoding')).toBeNull();
    expect(await raw.text()).toBe(SCRIPT);

    const etag = script.headers.get('etag')!;
    const again = await fetch(`${url}/assets/index-AbC123.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);

    expect((await fetch(`${url}/assets/index-AbC123.css`)).headers.get('content-type')).toBe(
      'text/css; charset=utf-8',
    );
    const png = await fetch(`${url}/logo.png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(png.headers.get('cache-control')).toBe('no-cache');
    const head = await fetch(`${url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it("gives the console's answers their own policy, denying framing, and sandboxes every other answer", async () => {
    const index = await fetch(`${url}/runs`);
    const etag = index.headers.get('etag')!;
    const answers = [
      index,
      await fetch(`${url}/`, { method: 'HEAD' }),
      await fetch(`${url}/`, { headers: { 'if-none-match': etag } }),
      await fetch(`${url}/assets/index-AbC123.js`),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 304, 200]);
    for (const answer of answers) {
      expect(answer.headers.get('content-security-policy')).toBe(CONSOLE_POLICY);
      expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    }
    // Not the console's: the API, a missing file, a raw route's answer, a wrong method.
    for (const [path, method] of [
      ['/api/test/ping', 'POST'],
      ['/assets/index-Old999.js', 'GET'],
      ['/proxy/services/p/r/', 'GET'],
      ['/runs', 'POST'],
    ] as const) {
      const answer = await fetch(`${url}${path}`, { method });
      expect(answer.headers.get('content-security-policy'), path).toBe(SANDBOX_POLICY);
      expect(answer.headers.get('x-frame-options'), path).toBeNull();
    }
  });

  it('answers 404 for a missing file, never index.html in its place', async () => {
    const response = await fetch(`${url}/assets/index-Old999.js`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { detail: Array<{ code: string }> }).detail[0]?.code).toBe(
      'not_found',
    );
    // No path leaves the build: it holds only the files read at start-up.
    expect(await (await fetch(`${url}/%2e%2e/%2e%2e/etc/passwd`)).text()).toBe(INDEX);
    expect((await fetch(`${url}/%2e%2e/%2e%2e/etc/hostname.txt`)).status).toBe(404);
  });

  it('leaves /api, /proxy and /metrics alone, and other methods to the routes', async () => {
    const ping = await fetch(`${url}/api/test/ping`, { method: 'POST' });
    expect(await ping.json()).toEqual({ pong: true });
    const shadowed = await fetch(`${url}/api/ping`);
    expect(shadowed.status).toBe(404);
    expect(shadowed.headers.get('content-type')).toContain('application/json');
    expect((await fetch(`${url}/api/unknown/route`)).status).toBe(404);
    expect(await (await fetch(`${url}/proxy/services/p/r/`)).text()).toBe('proxied');
    expect((await fetch(`${url}/proxy/other`)).status).toBe(404);
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    expect((await fetch(`${url}/runs`, { method: 'POST' })).status).toBe(404);
  });

  it('is absent, said in one log line, when the build has no index.html', () => {
    const logged: string[] = [];
    const empty = mkdtempSync(join(tmpdir(), 'dstack-web-empty-'));
    try {
      expect(loadWebConsole(empty, (message) => logged.push(message))).toBeNull();
      expect(loadWebConsole(join(empty, 'missing'), (message) => logged.push(message))).toBeNull();
      expect(loadWebConsole(null, (message) => logged.push(message))).toBeNull();
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    expect(logged).toHaveLength(2);
    expect(logged[0]).toContain(`The web console is not built (no index.html in ${empty})`);
  });
});
