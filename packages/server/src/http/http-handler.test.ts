/** The router's own behaviour, through a real server on loopback. */
import { request as httpRequest } from 'node:http';
import { NoCapacityError, ResourceNotFoundError } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { allRoutes } from '../api-routes.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { MAX_LISTED_PROBLEMS } from './error-mapping.js';
import { DEFAULT_MAX_BODY_BYTES, defineRoute, type RouteDefinition } from './route.js';

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
    path: '/api/test/large_body',
    summary: 'Takes a body larger than the default limit',
    auth: 'none',
    maxBodyBytes: 4 * DEFAULT_MAX_BODY_BYTES,
    body: z.object({ data: z.string() }),
    response: z.object({ length: z.number() }),
    handler: async ({ body }) => ({ length: body.data.length }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/no_body',
    summary: 'Takes no body',
    auth: 'none',
    response: z.object({ ok: z.boolean() }),
    handler: async () => ({ ok: true }),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/loose',
    summary: 'Takes any fields besides `kind`, checked further on',
    auth: 'none',
    body: z.looseObject({ kind: z.string() }),
    handler: async () => undefined,
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/optional_body',
    summary: 'Takes an optional body',
    auth: 'none',
    body: z.object({ limit: z.number().optional() }).optional(),
    handler: async () => undefined,
  }),
  defineRoute({
    method: 'POST',
    path: '/api/test/project/{project_name}/get',
    summary: 'A project route',
    auth: 'project-member',
    response: z.object({ name: z.string() }),
    handler: async ({ project }) => ({ name: project!.name }),
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
    // Two real routes besides: a body refused at length must not keep get_my_user waiting.
    const realRoutes = allRoutes.filter((route) =>
      ['/api/users/get_my_user', '/api/project/{project_name}/repos/init'].includes(route.path),
    );
    server = await createTestApp({
      dialect: 'sqlite',
      routes: [...routes, ...mismatchedRoutes, ...realRoutes],
    });
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

  it('refuses unknown top-level fields, one detail each, with a close known field suggested', async () => {
    expect(await server.request('/api/test/echo/x', { count: 1, cont: 2 })).toEqual({
      status: 400,
      body: {
        detail: [
          { msg: "unknown field 'cont'; did you mean 'count'?", code: 'invalid_request', fields: [['cont']] },
        ],
      },
    });
    const several = await server.request('/api/test/echo/x', { count: 1, tagz: [], 'x\u001b[2J': 1 });
    expect(several.status).toBe(400);
    expect(several.body.detail).toEqual([
      { msg: "unknown field 'tagz'; did you mean 'tags'?", code: 'invalid_request', fields: [['tagz']] },
      { msg: "unknown field 'x\u001b[2J'", code: 'invalid_request', fields: [['x\u001b[2J']] },
    ]);
    // A route without a body takes no fields; an empty object or no body at all is fine.
    expect(await server.request('/api/test/no_body', { verbose: true }, null)).toEqual({
      status: 400,
      body: { detail: [{ msg: "unknown field 'verbose'", code: 'invalid_request', fields: [['verbose']] }] },
    });
    expect((await server.request('/api/test/no_body', {}, null)).status).toBe(200);
    expect((await server.request('/api/test/no_body', undefined, null)).status).toBe(200);
    // Optional bodies are strict too; loose ones keep their extra fields for later checks.
    expect((await server.request('/api/test/optional_body', { limt: 1 }, null)).body.detail).toEqual([
      { msg: "unknown field 'limt'; did you mean 'limit'?", code: 'invalid_request', fields: [['limt']] },
    ]);
    expect((await server.request('/api/test/optional_body', { limit: 1 }, null)).status).toBe(200);
    expect((await server.request('/api/test/loose', { kind: 'a', extra: 1 }, null)).status).toBe(200);
  });

  it('refuses bodies that are not objects, naming what was expected', async () => {
    for (const body of [[{ count: 1 }], 'count', 3, null]) {
      const response = await server.request('/api/test/echo/x', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.detail[0]).toMatchObject({ code: 'invalid_request', fields: [[]] });
    }
    expect((await server.request('/api/test/no_body', [], null)).status).toBe(400);
  });

  it('refuses a {project_name} in the path that no project can have, naming the parameter', async () => {
    for (const name of ['a\r\nb', '\u001b[31mred', 'x'.repeat(51), 'a b', 'nul\u0000']) {
      const response = await server.request(`/api/test/project/${encodeURIComponent(name)}/get`);
      expect(response.status, JSON.stringify(name)).toBe(400);
      expect(response.body.detail).toEqual([
        {
          msg: expect.stringMatching(/^project_name \(in the path\): project name must be 1-50 letters/),
          code: 'invalid_request',
          fields: [['project_name']],
        },
      ]);
    }
    // A valid name goes on to the lookup.
    expect((await server.request('/api/test/project/no-such-project/get')).status).toBe(400);
  });

  it('maps dstack errors and hides unexpected ones', async () => {
    expect(await server.request('/api/test/fail/capacity', undefined, null)).toEqual({
      status: 400,
      body: { detail: [{ msg: 'no capacity in eu-west-1', code: 'no_offers' }] },
    });
    expect((await server.request('/api/test/fail/missing', undefined, null)).status).toBe(400);
    const internal = await server.request('/api/test/fail/boom', undefined, null);
    expect(internal).toEqual({
      status: 500,
      body: { detail: [{ msg: 'Internal server error', code: 'server_error' }] },
    });
    expect((await server.request('/api/test/bad_response', undefined, null)).status).toBe(500);
  });

  it("answers 413 for a body over its route's limit, 1 MiB unless the route says more", async () => {
    const over = JSON.stringify({ count: 1, tags: ['x'.repeat(DEFAULT_MAX_BODY_BYTES)] });
    const response = await server.request('/api/test/echo/x', JSON.parse(over));
    expect(response).toEqual({
      status: 413,
      body: {
        detail: [
          {
            msg: `Request body is ${over.length} bytes, over the limit of ${DEFAULT_MAX_BODY_BYTES} bytes for this route`,
            code: 'request_too_large',
          },
        ],
      },
    });
    const data = 'x'.repeat(2 * DEFAULT_MAX_BODY_BYTES);
    expect(await server.request('/api/test/large_body', { data }, null)).toEqual({
      status: 200,
      body: { length: data.length },
    });
    expect((await server.request('/api/test/large_body', { data: `${data}${data}` }, null)).status).toBe(413);
  });

  it('lists the first few problems of a body and counts the rest', async () => {
    // As many unknown fields as fit under the limit, then wrong types in an array.
    const unknown: Record<string, number> = { count: 1 };
    for (let index = 0; index < 50_000; index++) unknown[`k${index}`] = 1;
    const response = await fetch(`${server.url}/api/test/echo/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminToken}` },
      body: JSON.stringify(unknown),
    });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(text.length).toBeLessThan(4096);
    const { detail } = JSON.parse(text) as { detail: Array<{ msg: string; fields?: unknown }> };
    expect(detail).toHaveLength(MAX_LISTED_PROBLEMS + 1);
    expect(detail[0]).toEqual({ msg: "unknown field 'k0'", code: 'invalid_request', fields: [['k0']] });
    expect(detail.at(-1)).toEqual({
      msg: `and ${50_000 - MAX_LISTED_PROBLEMS} more problems`,
      code: 'invalid_request',
    });
    const badTags = await server.request('/api/test/echo/x', {
      count: 1,
      tags: Array.from({ length: 100_000 }, () => 1),
    });
    expect(badTags.status).toBe(400);
    expect(badTags.body.detail).toHaveLength(MAX_LISTED_PROBLEMS + 1);
    expect(badTags.body.detail[MAX_LISTED_PROBLEMS].msg).toBe(
      `and ${100_000 - MAX_LISTED_PROBLEMS} more problems`,
    );
    // Exactly the limit: no count line.
    const few = await server.request('/api/test/echo/x', {
      count: 1,
      tags: Array.from({ length: MAX_LISTED_PROBLEMS }, () => 1),
    });
    expect(few.body.detail).toHaveLength(MAX_LISTED_PROBLEMS);
  });

  it('refuses a 15 MB body of unknown fields to repos/init at its length and answers get_my_user meanwhile', async () => {
    const fields: string[] = [];
    for (let index = 0; fields.length < 800_000; index++) fields.push(`"field_${index}":1`);
    const body = `{"repo_id":"app-1","repo_info":{"repo_type":"virtual"},${fields.join(',')}}`;
    expect(body.length).toBeGreaterThan(10 * 1024 * 1024);
    const refused = fetch(`${server.url}/api/project/main/repos/init`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminToken}` },
      body,
    });
    const me = await server.request('/api/users/get_my_user');
    expect(me).toMatchObject({ status: 200, body: { username: 'admin' } });
    const answer = await refused;
    const text = await answer.text();
    expect(answer.status).toBe(413);
    expect(text.length).toBeLessThan(512);
    expect(JSON.parse(text).detail[0].code).toBe('request_too_large');
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
