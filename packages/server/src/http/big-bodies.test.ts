/**
 * The spec routes with the largest bodies their caps and the configuration bounds allow: the
 * server still answers a `get_my_user` sent meanwhile (issue 19: one member must not stall the
 * API). No timing: `get_my_user` is sent once the big body is written, and must be answered
 * before the big request is.
 */
import { request as httpRequest } from 'node:http';
import { MAX_CONFIGURATION_ENTRIES } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { createTestApp, type TestApp, type TestResponse } from '../testing/test-app.test.helpers.js';
import { type RouteDefinition, RUN_PLAN_MAX_BODY_BYTES, SPEC_MAX_BODY_BYTES } from './route.js';

const BIG_ROUTES = [
  '/api/project/{project_name}/runs/get_plan',
  '/api/project/{project_name}/runs/apply',
  '/api/project/{project_name}/fleets/apply',
];

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
    const routes = allRoutes.filter((route) =>
      [...BIG_ROUTES, '/api/users/get_my_user'].includes(route.path),
    );
    server = await createTestApp({ dialect: 'sqlite', routes });
  });
  afterAll(async () => {
    await server?.close();
  });

  /**
   * Sends `body`, then `get_my_user` as soon as the body is on its way (all of it written to the
   * socket): the order the answers came in.
   */
  async function race(path: string, body: unknown, limit: number) {
    const raw = Buffer.from(JSON.stringify(body));
    expect(raw.length).toBeLessThanOrEqual(limit);
    expect(raw.length).toBeGreaterThan(limit * 0.8);
    const order: string[] = [];
    let me: Promise<TestResponse> | undefined;
    const big = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = httpRequest(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          order.push('big');
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      request.end(raw, () => {
        me = server.request('/api/users/get_my_user').then((answer) => {
          order.push('get_my_user');
          return answer;
        });
      });
    });
    const bigAnswer = await big;
    expect(me).toBeDefined();
    expect(await me).toMatchObject({ status: 200, body: { username: 'admin' } });
    return { order, big: bigAnswer };
  }

  it('runs/get_plan: a task at every bound, 4 MiB', { timeout: 60_000 }, async () => {
    const { order, big } = await race(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration: boundedTask(RUN_PLAN_MAX_BODY_BYTES - 100_000) } },
      RUN_PLAN_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(200);
    expect(order).toEqual(['get_my_user', 'big']);
  });

  it('runs/apply: the same task and 16 MiB of fields in the run sent back', { timeout: 60_000 }, async () => {
    const { order, big } = await race(
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
    expect(order).toEqual(['get_my_user', 'big']);
  });

  it('runs/apply: an env of 16 MiB, refused naming it', { timeout: 60_000 }, async () => {
    const { order, big } = await race(
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
    // Refused right after parsing: nothing is left to run after get_my_user, either order is fine.
    expect(order).toHaveLength(2);
  });

  it('fleets/apply: a fleet spec at its bounds, 16 MiB', { timeout: 60_000 }, async () => {
    const perField = Math.floor((SPEC_MAX_BODY_BYTES - 1000) / (10 * MAX_CONFIGURATION_ENTRIES)) - 16;
    const profile = record(10, () => record(MAX_CONFIGURATION_ENTRIES - 1, () => 'x'.repeat(perField)));
    const { order, big } = await race(
      '/api/project/main/fleets/apply',
      { plan: { spec: { configuration: { type: 'fleet', name: 'big-body', nodes: 0 }, profile } } },
      SPEC_MAX_BODY_BYTES,
    );
    expect(big.status).toBe(200);
    expect(order).toEqual(['get_my_user', 'big']);
  });
});
