#!/usr/bin/env node
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
/**
 * Where the time goes for big bodies on the spec routes (`runs/get_plan`, `runs/apply`,
 * `fleets/apply`): JSON.parse, body validation (zod + the configuration's own checks), the
 * handler, and the whole HTTP round trip with a parallel `get_my_user`. A measuring script, not a
 * test: run after `pnpm build` with `node packages/server/scripts/measure-big-bodies.mjs [case…]`.
 */
import { performance } from 'node:perf_hooks';
import { allRoutes } from '../dist/api-routes.js';
import { startServer } from '../dist/index.js';

const TARGET = Number(process.env.TARGET_BYTES ?? 15 * 1024 * 1024);

/** A record of `count` entries whose keys and values are `key(i)` / `value(i)`. */
function record(count, key, value) {
  const out = {};
  for (let i = 0; i < count; i++) out[key(i)] = value(i);
  return out;
}

/** How many entries of `entryBytes` fit in TARGET. */
const fit = (entryBytes) => Math.floor(TARGET / entryBytes);

/** A task at every bound: 10,000 env entries, commands, files and ports, env values filling `bytes`. */
function worstTask(bytes) {
  const rest = 10_000 * 40;
  const valueLength = Math.max(1, Math.floor((bytes - rest) / 10_000) - 12);
  return {
    type: 'task',
    env: record(
      10_000,
      (i) => `K${i}`,
      () => 'v'.repeat(valueLength),
    ),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a dstack secret reference.
    commands: Array.from({ length: 10_000 }, () => 'echo ${{ secrets.X }}'),
    files: Array.from({ length: 10_000 }, (_, i) => `./f${i}:/f${i}`),
    ports: Array.from({ length: 10_000 }, (_, i) => 10_000 + i),
  };
}

const task = (extra) => ({ type: 'task', commands: ['true'], ...extra });
const plan = (configuration) => ({ run_spec: { configuration } });

const cases = {
  'get_plan env map': () => [
    'runs/get_plan',
    plan(
      task({
        env: record(
          fit(16),
          (i) => `K${i}`,
          () => 'v',
        ),
      }),
    ),
  ],
  'get_plan env list': () => [
    'runs/get_plan',
    plan(task({ env: Array.from({ length: fit(12) }, (_, i) => `K${i}=v`) })),
  ],
  'get_plan commands': () => [
    'runs/get_plan',
    plan(task({ commands: Array.from({ length: fit(8) }, () => 'true') })),
  ],
  'get_plan secrets in commands': () => [
    'runs/get_plan',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a dstack secret reference.
    plan(task({ commands: Array.from({ length: fit(30) }, () => 'echo ${{ secrets.X }}') })),
  ],
  'get_plan ports': () => [
    'runs/get_plan',
    plan(task({ ports: Array.from({ length: fit(7) }, (_, i) => 1000 + (i % 60000)) })),
  ],
  'get_plan port typos': () => [
    'runs/get_plan',
    plan(task({ ports: Array.from({ length: fit(11) }, () => ({ prot: 1 })) })),
  ],
  'get_plan bad env values': () => [
    'runs/get_plan',
    plan(
      task({
        env: record(
          fit(17),
          (i) => `K${i}`,
          () => ({}),
        ),
      }),
    ),
  ],
  'get_plan unknown keys': () => [
    'runs/get_plan',
    plan(
      task(
        record(
          fit(16),
          (i) => `k${i}`,
          () => 1,
        ),
      ),
    ),
  ],
  'get_plan unknown nested': () => [
    'runs/get_plan',
    plan(
      task({
        resources: record(
          fit(16),
          (i) => `k${i}`,
          () => 1,
        ),
      }),
    ),
  ],
  'get_plan files': () => [
    'runs/get_plan',
    plan(task({ files: Array.from({ length: fit(14) }, (_, i) => `./f${i}:/f`) })),
  ],
  // The worst bodies the bounds allow: full mappings and lists, values filling the body.
  'get_plan worst valid': () => ['runs/get_plan', plan(worstTask(3.9 * 1024 * 1024))],
  'runs/apply worst valid': () => [
    'runs/apply',
    {
      plan: {
        run_spec: { configuration: worstTask(3.9 * 1024 * 1024) },
        current_resource: record(
          fit(16),
          (i) => `k${i}`,
          () => 1,
        ),
      },
    },
  ],
  'fleets/apply worst valid': () => [
    'fleets/apply',
    {
      plan: {
        spec: {
          configuration: { type: 'fleet', name: 'my-fleet', nodes: 0 },
          // 10 mappings at the entry bound, filling the body.
          profile: record(
            10,
            (i) => `p${i}`,
            () =>
              record(
                9_999,
                (j) => `k${j}`,
                () => 'x'.repeat(140),
              ),
          ),
        },
      },
    },
  ],
  'runs/apply env map': () => [
    'runs/apply',
    {
      plan: plan(
        task({
          env: record(
            fit(16),
            (i) => `K${i}`,
            () => 'v',
          ),
        }),
      ),
    },
  ],
  'fleets/apply env map': () => [
    'fleets/apply',
    {
      plan: {
        spec: {
          configuration: {
            type: 'fleet',
            name: 'my-fleet',
            nodes: 0,
            env: record(
              fit(16),
              (i) => `K${i}`,
              () => 'v',
            ),
          },
        },
      },
    },
  ],
};

const selected = process.argv.slice(2);
const serverDir = mkdtempSync(join(tmpdir(), 'measure-big-bodies-'));
const server = await startServer({
  env: { DSTACK_SERVER_DIR: serverDir, DSTACK_SERVER_ADMIN_TOKEN: 'measure-admin' },
  config: { projects: [{ name: 'main' }] },
  host: '127.0.0.1',
  port: 0,
  pipelines: false,
});
const request = async (path) => {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: 'Bearer measure-admin' },
  });
  await r.text();
  return { status: r.status };
};
try {
  for (const [name, make] of Object.entries(cases)) {
    if (selected.length > 0 && !selected.some((s) => name.includes(s))) continue;
    const [path, value] = make();
    const raw = JSON.stringify(value);
    const route = allRoutes.find((r) => r.path === `/api/project/{project_name}/${path}`);
    let t = performance.now();
    const parsedJson = JSON.parse(raw);
    const parseMs = performance.now() - t;
    t = performance.now();
    const validated = route.body.safeParse(parsedJson);
    const validateMs = performance.now() - t;
    // The whole route over HTTP, with get_my_user sent right after it.
    t = performance.now();
    const big = fetch(`${server.url}/api/project/main/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer measure-admin`, 'content-type': 'application/json' },
      body: raw,
    }).then(async (r) => ({
      status: r.status,
      text: (await r.text()).slice(0, 200),
      ms: performance.now() - t,
    }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const meStart = performance.now();
    const me = await request('/api/users/get_my_user');
    const meMs = performance.now() - meStart;
    const answer = await big;
    console.log(
      `${name.padEnd(30)} ${(raw.length / 1048576).toFixed(1)} MiB  JSON.parse ${parseMs.toFixed(0)} ms  ` +
        `validate ${validateMs.toFixed(0)} ms (${validated.success ? 'ok' : `${validated.error.issues.length} issues`})  ` +
        `HTTP ${answer.status} ${answer.ms.toFixed(0)} ms  get_my_user ${me.status} ${meMs.toFixed(0)} ms` +
        (answer.status >= 400 ? `\n    ${answer.text}` : ''),
    );
  }
} finally {
  await server.close();
  rmSync(serverDir, { recursive: true, force: true });
}
