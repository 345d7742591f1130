/**
 * The spec routes with the largest bodies their caps and the configuration bounds allow: a
 * `get_my_user` that comes while the server parses one is served before the big request's handler
 * runs (issue 19: one member must not stall the API). No timing: the `get_my_user` request is
 * written to its socket while the big body is being validated, and the routes record the order
 * their handlers start in.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { MAX_CONFIGURATION_ENTRIES } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allRoutes } from '../api-routes.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { type RouteDefinition, RUN_PLAN_MAX_BODY_BYTES, SPEC_MAX_BODY_BYTES } from './route.js';

const GET_MY_USER = '/api/users/get_my_user';
const BIG_ROUTES = [
  '/api/project/{project_name}/runs/get_plan',
  '/api/project/{project_name}/runs/apply',
  '/api/project/{project_name}/fleets/apply',
];

/** The handlers started, in order. */
const started: string[] = [];
/** Called (synchronously) while a big route validates its body. */
let whileValidating: () => void = () => {};

/** The route, recording its handler's start, and for a big route calling `whileValidating`. */
function watched(route: RouteDefinition): RouteDefinition {
  const name = route.path === GET_MY_USER ? 'get_my_user' : 'big';
  const handler: RouteDefinition['handler'] = (ctx) => {
    started.push(name);
    return route.handler(ctx);
  };
  if (name !== 'big' || route.body === undefined) return { ...route, handler };
  const body = z.preprocess((value) => {
    whileValidating();
    return value;
  }, route.body);
  return { ...route, body, handler };
}

function record(count: number, value: (index: number) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let index = 0; index < count; index++) out[`K${index}`] = value(index);
  return out;
}

/** A task at the bounds: as many env entries, commands, files and ports as allowed, `bytes` in all. */
function boundedTask(bytes: number) {
  const entries = MAX_CONFIGURATION_ENTRIES;
  const valueLength = Math.floor((bytes - 500_000) / entries);
  return {
    type: 'task',
    env: record(entries, () => 'v'.repeat(valueLength)),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a dstack secret reference, checked by get_plan.
    commands: Array.from({ length: entries }, () => 'echo ${{ secrets.X }}'),
    files: Array.from({ length: entries }, (_, index) => `./f${index}:/f${index}`),
    ports: Array.from({ length: entries }, (_, index) => 10_000 + index),
  };
}

/** An object of small fields filling `bytes` of JSON: the most costly shape to parse. */
function manyFields(bytes: number): Record<string, unknown> {
  return record(Math.floor(bytes / 14), () => 1);
}

describe('big bodies on the spec routes', () => {
  let server: TestApp;
  beforeAll(async () => {
    const routes = allRoutes.filter((route) => [...BIG_ROUTES, GET_MY_USER].includes(route.path));
    server = await createTestApp({ dialect: 'sqlite', routes: routes.map(watched) });
  });
  afterAll(async () => {
    await server?.close();
  });

  function post(path: string, raw: Buffer): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      request.end(raw);
    });
  }

  /** A connected socket and the answer to the `get_my_user` request written on it later. */
  async function getMyUserSocket(): Promise<{ socket: Socket; send: () => void; answer: Promise<string> }> {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const answer = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      socket.on('end', () => resolve(text));
    });
    const send = () =>
      socket.write(
        `POST ${GET_MY_USER} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${server.adminToken}\r\n` +
          'content-length: 0\r\nconnection: close\r\n\r\n',
      );
    return { socket, send, answer };
  }

  /** Sends `body`; while the server validates it, `get_my_user`. The handlers' order and both answers. */
  async function race(path: string, body: unknown, limit: number) {
    const raw = Buffer.from(JSON.stringify(body));
    expect(raw.length).toBeLessThanOrEqual(limit);
    expect(raw.length).toBeGreaterThan(limit * 0.8);
    started.length = 0;
    const me = await getMyUserSocket();
    // The request is in the server's socket before the big request's handler could start.
    whileValidating = () => {
      whileValidating = () => {};
      me.send();
    };
    const big = await post(path, raw);
    const meAnswer = await me.answer;
    expect(meAnswer).toMatch(/^HTTP\/1\.1 200 /);
    expect(meAnswer).toContain('"username":"admin"');
    return { started: [...started], big };
  }

  it('runs/get_plan: a task at every bound, 4 MiB', { timeout: 60_000 }, async () => {
    const { started, big } = await race(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration: boundedTask(RUN_PLAN_MAX_BODY_BYTES - 100_000) } },
      RUN_PLAN_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(200);
    expect(started).toEqual(['get_my_user', 'big']);
  });

  it('runs/apply: the same task and 16 MiB of fields in the run sent back', { timeout: 60_000 }, async () => {
    const { started, big } = await race(
      '/api/project/main/runs/apply',
      {
        plan: {
          run_spec: { run_name: 'big-body', configuration: boundedTask(RUN_PLAN_MAX_BODY_BYTES - 100_000) },
          current_resource: manyFields(SPEC_MAX_BODY_BYTES - RUN_PLAN_MAX_BODY_BYTES),
        },
      },
      SPEC_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(200);
    expect(started).toEqual(['get_my_user', 'big']);
  });

  it('runs/apply: an env of 16 MiB, refused naming it', { timeout: 60_000 }, async () => {
    const { started, big } = await race(
      '/api/project/main/runs/apply',
      {
        plan: {
          run_spec: {
            configuration: { type: 'task', commands: ['true'], env: manyFields(SPEC_MAX_BODY_BYTES - 1000) },
          },
        },
      },
      SPEC_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(400);
    expect(JSON.parse(big.text).detail[0]).toMatchObject({
      msg: expect.stringMatching(
        /^plan\.run_spec\.configuration\.env: \d+ entries, more than the 10000 allowed$/,
      ),
      fields: [['plan', 'run_spec', 'configuration', 'env']],
    });
    // Refused once parsed: the big handler never runs.
    expect(started).toEqual(['get_my_user']);
  });

  it('bounds the loose parts of a run spec too, naming the field', async () => {
    const configuration = { type: 'task', commands: ['true'] };
    const profile = record(MAX_CONFIGURATION_ENTRIES + 1, () => 1);
    const answer = await server.request('/api/project/main/runs/get_plan', {
      run_spec: { configuration, profile },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toEqual([
      {
        msg: `run_spec.profile: ${MAX_CONFIGURATION_ENTRIES + 1} entries, more than the ${MAX_CONFIGURATION_ENTRIES} allowed`,
        code: 'invalid_request',
        fields: [['run_spec', 'profile']],
      },
    ]);
  });

  it('fleets/apply: a fleet spec at its bounds, 16 MiB', { timeout: 60_000 }, async () => {
    // The profile fills what the fleet leaves unset (dstack's fleet spec), so its bulk is a field a
    // fleet has: `tags`, at the most entries one mapping may hold.
    const perTag = Math.floor((SPEC_MAX_BODY_BYTES - 1000) / MAX_CONFIGURATION_ENTRIES) - 16;
    const profile = { tags: record(MAX_CONFIGURATION_ENTRIES - 1, () => 'x'.repeat(perTag)) };
    const { started, big } = await race(
      '/api/project/main/fleets/apply',
      { plan: { spec: { configuration: { type: 'fleet', name: 'big-body', nodes: 0 }, profile } } },
      SPEC_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(200);
    expect(started).toEqual(['get_my_user', 'big']);
  });
});
