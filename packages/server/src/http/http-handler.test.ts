/** The router's own behaviour, through a real server on loopback. */
import { request as httpRequest } from 'node:http';
import { NoCapacityError, ResourceNotFoundError } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createTestApp, type TestApp } from '../testing/test-app.js';
import { defineRoute, type RouteDefinition } from './route.js';

const streamAborted: { value: boolean } = { value: false };
let releaseStream: (() => void) | undefined;

const routes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/test/echo/{name}',
    summary: 'Echo',
    auth: 'user',
    body: z.object({ count: z.number().int(), tags: z.array(z.string()).default([]) }),
    response: z.object({ name: z.string(), count: z.number(), user: z.string() }),
    handler: async ({ body, params, user }) => ({ name: params.name!, count: body.count, user: user!.name }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/fail/{kind}',
    summary: 'Throws',
    auth: 'none',
    handler: async ({ params }) => {
      if (params.kind === 'capacity') throw new NoCapacityError('no capacity in eu-west-1');
      if (params.kind === 'missing') throw new ResourceNotFoundError('Run "x" does not exist');
      throw new Error('database password is hunter2');
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/bad_response',
    summary: 'Answers outside its schema',
    auth: 'none',
    response: z.object({ ok: z.boolean() }),
    handler: async () => ({ ok: 'yes' }) as unknown as { ok: boolean },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/stream',
    summary: 'Streams lines until the client leaves',
    auth: 'none',
    responseContentType: 'application/x-ndjson',
    handler: async ({ signal }) => ({
      kind: 'stream',
      chunks: (async function* () {
        yield '{"n":1}\n';
        yield '{"n":2}\n';
        await new Promise<void>((resolve) => {
          releaseStream = resolve;
          signal.addEventListener('abort', () => resolve());
        });
        streamAborted.value = signal.aborted;
      })(),
    }),
  }),
];

const mismatchedRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/test/json_route_streams',
    summary: 'A JSON route answering with a stream',
    auth: 'none',
    handler: async () => ({ kind: 'stream', chunks: (async function* () {})() }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/stream_route_answers_json',
    summary: 'A streaming route answering with one value',
    auth: 'none',
    responseContentType: 'application/x-ndjson',
    handler: async () => ({ n: 1 }),
  }),
];

describe('createHttpHandler', () => {
  let server: TestApp;
  beforeAll(async () => {
    server = await createTestApp({ dialect: 'sqlite', routes: [...routes, ...mismatchedRoutes] });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('matches path templates, validates bodies and applies defaults', async () => {
    const ok = await server.request('/api/test/echo/some%20name', { count: 3 });
    expect(ok).toEqual({ status: 200, body: { name: 'some name', count: 3, user: 'admin' } });
    const bad = await server.request('/api/test/echo/x', { count: 1.5, tags: ['a', 2] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail.map((detail: { fields: unknown }) => detail.fields)).toEqual([
      [['count']],
      [['tags', 1]],
    ]);
  });

  it('answers unknown paths, wrong methods and malformed JSON in the one error shape', async () => {
    expect(await server.request('/api/nothing/here', {})).toEqual({
      status: 404,
      body: { detail: [{ msg: 'Not found: /api/nothing/here', code: 'not_found' }] },
    });
    const wrongMethod = await server.request('/api/test/echo/x', undefined, undefined, { method: 'GET' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body.detail[0].code).toBe('method_not_allowed');
    const response = await fetch(`${server.url}/api/test/echo/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminToken}` },
      body: '{"count": 1,',
    });
    expect(response.status).toBe(400);
    expect(
      ((await response.json()) as { detail: Array<{ msg: string; code: string }> }).detail[0],
    ).toMatchObject({
      code: 'invalid_json',
      msg: expect.stringMatching(/^Malformed JSON body: /),
    });
  });

  it('maps dstack errors and hides unexpected ones', async () => {
    expect(await server.request('/api/test/fail/capacity', undefined, null)).toEqual({
      status: 400,
      body: { detail: [{ msg: 'no capacity in eu-west-1', code: 'no_offers' }] },
    });
    expect((await server.request('/api/test/fail/missing', undefined, null)).status).toBe(404);
    const internal = await server.request('/api/test/fail/boom', undefined, null);
    expect(internal).toEqual({
      status: 500,
      body: { detail: [{ msg: 'Internal server error', code: 'server_error' }] },
    });
    expect((await server.request('/api/test/bad_response', undefined, null)).status).toBe(500);
  });

  it('answers 413 for bodies over 16 MB', async () => {
    const huge = JSON.stringify({ count: 1, tags: ['x'.repeat(17 * 1024 * 1024)] });
    const response = await server.request('/api/test/echo/x', JSON.parse(huge));
    expect(response).toEqual({
      status: 413,
      body: { detail: [{ msg: 'Request body is larger than 16777216 bytes', code: 'request_too_large' }] },
    });
  });

  it('streams chunks and aborts the handler when the client disconnects', async () => {
    streamAborted.value = false;
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const request = httpRequest(`${server.url}/api/test/stream`, { method: 'POST' }, (response) => {
        expect(response.headers['content-type']).toBe('application/x-ndjson');
        // Proxies must pass lines on as they come.
        expect(response.headers['x-accel-buffering']).toBe('no');
        expect(response.headers['cache-control']).toBe('no-cache');
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          received.push(chunk);
          if (received.join('').includes('{"n":2}')) request.destroy();
        });
        response.on('error', () => {});
        response.on('close', () => resolve());
      });
      request.on('error', (error) => (error.message.includes('socket hang up') ? resolve() : reject(error)));
      request.end();
    });
    await expect.poll(() => streamAborted.value).toBe(true);
    expect(received.join('')).toBe('{"n":1}\n{"n":2}\n');
    releaseStream?.();
  });

  it('answers 500 when a handler answers other than its route declares (stream or JSON)', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      for (const path of ['/api/test/json_route_streams', '/api/test/stream_route_answers_json']) {
        expect(await server.request(path, undefined, null)).toEqual({
          status: 500,
          body: { detail: [{ msg: 'Internal server error', code: 'server_error' }] },
        });
      }
      expect(logged.mock.calls.map(([message]) => String(message))).toEqual([
        expect.stringContaining('is a stream but the route declares responseContentType application/json'),
        expect.stringContaining(
          'is not a stream but the route declares responseContentType application/x-ndjson',
        ),
      ]);
    } finally {
      logged.mockRestore();
    }
  });
});
