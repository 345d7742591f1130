/**
 * The whole API under malformed bodies, as a probe of the server would send them: for every JSON
 * route, bodies generated from the route's own schema with wrong types, hostile strings, huge
 * numbers and stray fields mixed in (a seeded generator, so a failure replays). No answer may be a
 * 5xx, and error answers stay small. Routes whose bodies carry a configuration (whose schema is
 * code, not JSON Schema) also get valid bodies, every real `.dstack.yml` of the team's examples
 * among them, with a few of their values replaced, removed or added. Then a user who belongs to no project tries every project
 * route: each answers the same 403, and the project is unchanged. One database (SQLite): the
 * answers are the HTTP layer's and the services', not the dialect's.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY, seededRandom } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { allRoutes } from './api-routes.js';
import type { RouteDefinition } from './http/route.js';
import { createTestApp, type TestApp } from './testing/test-app.test.helpers.js';

const BODIES_PER_ROUTE = 40;
/** An error answer names the first problems only; no answer to a small body is large. */
const MAX_ERROR_BYTES = 16 * 1024;

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
};

const HOSTILE_STRINGS = [
  '',
  ' ',
  'main',
  'task',
  'x'.repeat(10_000),
  '../../etc/passwd',
  '/etc/shadow',
  'nul\u0000byte',
  '\u001b[31mred\u001b[0m',
  'crlf\r\nInjected: 1',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's secret reference, sent as written.
  '${{ secrets.nope }}',
  '$(id)',
  '%s%n%x',
  '💥',
  '\ud800',
  'http://127.0.0.1:1',
  '1..',
  '-1',
  'null',
];
const HOSTILE_NUMBERS = [0, -1, 1, 0.5, -0.0, 2 ** 31, 2 ** 53 + 2, 1e308, -1e308, 1e-308];

function pick<T>(random: () => number, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)]!;
}

/** Any JSON value, nested at most `depth` deep. */
function anyValue(random: () => number, depth: number): unknown {
  const kind = Math.floor(random() * (depth > 0 ? 7 : 5));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return pick(random, HOSTILE_NUMBERS);
    case 3:
    case 4:
      return pick(random, HOSTILE_STRINGS);
    case 5:
      return Array.from({ length: Math.floor(random() * 4) }, () => anyValue(random, depth - 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [
          pick(random, ['type', 'name', '__proto__', 'constructor', `k${i}`]),
          anyValue(random, depth - 1),
        ]),
      );
  }
}

/** Strings most fields accept, so bodies get past the first field to the checks behind it. */
const PLAIN_STRINGS = ['main', 'abc-1', 'task', 'true', '1', '8GB', 'us-east-1'];

interface Fuzz {
  random: () => number;
  /** The chance that a value is replaced by one of any shape (0: every value has the schema's shape). */
  mutation: number;
  root: JsonSchema;
}

/** A value near `schema`: mostly of its shape, sometimes of any other. */
function fuzzValue(schema: JsonSchema, fuzz: Fuzz, depth: number): unknown {
  const { random, root } = fuzz;
  if (depth <= 0 || random() < fuzz.mutation) return anyValue(random, 2);
  if (schema.$ref) {
    const name = schema.$ref.replace(/^#\/\$defs\//, '');
    const target = root.$defs?.[name];
    return target ? fuzzValue(target, fuzz, depth - 1) : anyValue(random, 2);
  }
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices && choices.length > 0) return fuzzValue(pick(random, choices), fuzz, depth);
  if (schema.allOf && schema.allOf.length > 0) return fuzzValue(schema.allOf[0]!, fuzz, depth);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum && schema.enum.length > 0) return pick(random, schema.enum);
  const type = Array.isArray(schema.type) ? pick(random, schema.type) : schema.type;
  switch (type) {
    case 'object': {
      const body: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(schema.properties ?? {})) {
        const required = schema.required?.includes(key) ?? false;
        if (required ? random() < 0.95 : random() < 0.5) {
          body[key] = fuzzValue(property, fuzz, depth - 1);
        }
      }
      if (random() < fuzz.mutation) body[`zz_${Math.floor(random() * 100)}`] = anyValue(random, 1);
      return body;
    }
    case 'array':
      return Array.from({ length: Math.floor(random() * 4) }, () =>
        schema.items ? fuzzValue(schema.items, fuzz, depth - 1) : anyValue(random, 1),
      );
    case 'string':
      return pick(random, random() < fuzz.mutation * 4 ? HOSTILE_STRINGS : PLAIN_STRINGS);
    case 'integer':
    case 'number':
      return random() < fuzz.mutation * 4 ? pick(random, HOSTILE_NUMBERS) : Math.floor(random() * 4);
    case 'boolean':
      return random() < 0.5;
    case 'null':
      return null;
    default:
      return anyValue(random, 2);
  }
}

function bodySchema(route: RouteDefinition): JsonSchema {
  if (!route.body) return { type: 'object' };
  return z.toJSONSchema(route.body, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** Bodies from exact-shaped (a fifth of them) to mostly wrong, replayable from `seed`. */
function fuzzBody(schema: JsonSchema, seed: number): unknown {
  const mutation = [0, 0.01, 0.03, 0.1, 0.25][seed % 5]!;
  return fuzzValue(schema, { random: seededRandom(seed), mutation, root: schema }, 8);
}

/** The real configurations users write (the repository's copy of the team's shared examples). */
const EXAMPLES_DIR = fileURLToPath(new URL('../../../examples/dstack/', import.meta.url));
function exampleConfigurations(): Record<string, unknown>[] {
  return readdirSync(EXAMPLES_DIR)
    .filter((file) => file.endsWith('.yml'))
    .map((file) => parse(readFileSync(join(EXAMPLES_DIR, file), 'utf8')) as Record<string, unknown>);
}

/** Valid bodies of the routes whose configuration the JSON Schema cannot describe. */
function validBodies(path: string, configurations: Record<string, unknown>[]): unknown[] {
  const runs = configurations.filter(
    (configuration) => !['fleet', 'volume', 'gateway'].includes(String(configuration.type)),
  );
  const task = { type: 'task', commands: ['echo hi'], resources: { cpu: '1..', memory: '1GB..' } };
  const runSpec = (configuration: unknown) => ({ run_spec: { configuration, repo_id: 'fuzz' } });
  if (path.endsWith('/runs/get_plan')) return [task, ...runs].map(runSpec);
  if (path.endsWith('/runs/apply')) return [task, ...runs].map((c) => ({ plan: runSpec(c), force: false }));
  if (path.endsWith('/fleets/apply')) {
    const fleets = configurations.filter((configuration) => configuration.type === 'fleet');
    return [{ type: 'fleet', name: 'fuzz-fleet', nodes: 0 }, ...fleets].map((configuration) => ({
      plan: { spec: { configuration } },
      force: false,
    }));
  }
  if (path.endsWith('/offers/list'))
    return [{ configuration: { resources: { gpu: 'A100:1..' } }, max_offers: 5 }];
  if (path.endsWith('/backends/create') || path.endsWith('/backends/update')) {
    return [
      { type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY }, regions: ['r1'] },
    ];
  }
  return [];
}

/** `value` with `count` of its values replaced by any value, removed, or joined by a stray key. */
function mutate(value: unknown, random: () => number, count: number): unknown {
  const copy = structuredClone(value);
  for (let n = 0; n < count; n += 1) {
    let parent: Record<string, unknown> | unknown[] | undefined;
    let key: string | number | undefined;
    let node: unknown = copy;
    // Walk down a random path, stopping at a random depth.
    while (node !== null && typeof node === 'object' && random() < 0.75) {
      const keys: Array<string | number> = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
      if (keys.length === 0) break;
      parent = node as Record<string, unknown>;
      key = pick(random, keys);
      node = (node as Record<string | number, unknown>)[key];
    }
    if (parent === undefined || key === undefined) continue;
    const action = random();
    if (action < 0.6) (parent as Record<string | number, unknown>)[key] = anyValue(random, 2);
    else if (action < 0.8 && !Array.isArray(parent)) delete parent[key as string];
    else if (!Array.isArray(parent)) parent[`zz_${n}`] = anyValue(random, 1);
  }
  return copy;
}

const jsonRoutes = allRoutes.filter((route) => route.method === 'POST' && !route.upload);

describe('API under malformed bodies', () => {
  let server: TestApp;
  let outsiderToken: string;

  beforeAll(async () => {
    server = await createTestApp({
      dialect: 'sqlite',
      routes: allRoutes,
      plugins: [createFakeBackendPlugin()],
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } }],
          },
        ],
      },
    });
    outsiderToken = (await server.request('/api/users/create', { username: 'outsider' })).body.creds.token;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers every generated body of every route without a 5xx, errors small', async () => {
    expect(jsonRoutes.length).toBeGreaterThan(25);
    let sent = 0;
    const configurations = exampleConfigurations();
    expect(configurations.length).toBeGreaterThan(20);
    for (const [index, route] of jsonRoutes.entries()) {
      const schema = bodySchema(route);
      const valid = validBodies(route.path, configurations);
      const count = valid.length > 0 ? Math.max(BODIES_PER_ROUTE, valid.length * 4) : BODIES_PER_ROUTE;
      for (let n = 0; n < count; n += 1) {
        const seed = index * 1000 + n;
        const random = seededRandom(seed);
        // Each valid body as is, then with 1, 2 and 4 changes; then bodies from the schema.
        const body =
          n < valid.length * 4
            ? mutate(valid[n % valid.length], random, [0, 1, 2, 4][Math.floor(n / valid.length)]!)
            : fuzzBody(schema, seed);
        // A fuzzed body never deletes what the later bodies act on.
        const path = route.path.replace('{project_name}', 'main');
        if (/\/(delete|remove_members|set_members|refresh_token)$/.test(path)) continue;
        const response = await server.request(path, body);
        const what = `${route.path} seed ${seed}: ${JSON.stringify(body).slice(0, 300)}`;
        expect(response.status, what).toBeLessThan(500);
        if (response.status >= 400) {
          expect(JSON.stringify(response.body).length, what).toBeLessThan(MAX_ERROR_BYTES);
          expect(response.body.detail, what).toEqual(expect.any(Array));
        }
        sent += 1;
      }
    }
    expect(sent).toBeGreaterThan(800);
  }, 120_000);

  it('gives a user of no project the same 403 on every project route, with nothing changed', async () => {
    const before = await server.request('/api/projects/main/get');
    const runsBefore = await server.request('/api/project/main/runs/list', {});
    const projectRoutes = jsonRoutes.filter((route) => route.path.includes('{project_name}'));
    expect(projectRoutes.length).toBeGreaterThan(15);
    for (const [index, route] of projectRoutes.entries()) {
      const schema = bodySchema(route);
      for (const project of ['main', 'no-such-project']) {
        const body = fuzzBody(schema, 50_000 + index);
        const response = await server.request(
          route.path.replace('{project_name}', project),
          body,
          outsiderToken,
        );
        expect(response, `${route.path} in ${project}`).toEqual({
          status: 403,
          body: { detail: [{ msg: 'Access denied', code: 'forbidden' }] },
        });
      }
    }
    expect(await server.request('/api/projects/main/get')).toEqual(before);
    expect(await server.request('/api/project/main/runs/list', {})).toEqual(runsBefore);
  });
});
