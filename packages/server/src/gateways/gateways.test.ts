/**
 * Gateways through the API on both databases: which gateway publishes a service (`gateway:` a
 * name, `true`, `false`, or the project's default) and the URL the Run gives, the refusals
 * naming `gateway`, the default switched by `set_default`, and a deleted gateway gone from the
 * list. Gateways are written as rows here: launching them is the AWS end-to-end test's
 * (test/gateway-aws.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayStatus } from '@dstack/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { gatewayConfigurationColumn } from '../db/json-columns.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';

describeEachDialect('gateways and the services they publish', (getDb) => {
  let server: TestApp;
  let temp: string;

  beforeAll(async () => {
    temp = mkdtempSync(join(tmpdir(), 'dstack-gateways-unit-'));
    server = await createTestApp({
      dialect: getDb().dialect,
      routes: allRoutes,
      config: {
        projects: [{ name: 'main', backends: [{ type: 'local', instances_dir: join(temp, 'instances') }] }],
      },
    });
    for (const [name, status, domain, isDefault, certificate] of [
      ['gw-a', 'running', 'a.test', 1, { type: 'lets-encrypt' }],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's own variable syntax.
      ['gw-b', 'running', '${{ run.project_name }}.b.test', 0, null],
      ['gw-c', 'provisioning', 'c.test', 0, null],
    ] as const) {
      await insertGateway(name, status, domain, isDefault, certificate);
    }
  });

  afterAll(async () => {
    await server?.close();
    rmSync(temp, { recursive: true, force: true });
  });

  async function insertGateway(
    name: string,
    status: GatewayStatus,
    domain: string,
    isDefault: number,
    certificate: { type: 'lets-encrypt' } | null,
  ) {
    const project = await server.app.db
      .selectFrom('projects')
      .selectAll()
      .where('name', '=', 'main')
      .executeTakeFirstOrThrow();
    await server.app.db
      .insertInto('gateways')
      .values({
        id: randomUUID(),
        project_id: project.id,
        user_id: project.owner_id,
        name,
        status,
        status_message: null,
        configuration: gatewayConfigurationColumn.encode({
          type: 'gateway',
          name,
          backend: 'aws',
          region: 'us-east-1',
          domain,
          public_ip: true,
          certificate,
          replicas: 1,
        }),
        certificate_private_key: null,
        wildcard_domain: domain,
        is_default: isDefault,
        provisioning_data: null,
        created_at: Date.now(),
        // Far from due: no pipeline runs here, and none should take these rows.
        last_processed_at: Date.now(),
        to_be_deleted: 0,
        deleted: 0,
        deleted_at: null,
        lock_expires_at: null,
        lock_token: null,
        lock_owner: null,
      })
      .execute();
  }

  const service = (name: string, extra: Record<string, unknown> = {}) => ({
    type: 'service',
    name,
    port: 8000,
    commands: ['python -m http.server'],
    ...extra,
  });
  const apply = (configuration: Record<string, unknown>) =>
    server.request('/api/project/main/runs/apply', { plan: { run_spec: { configuration } }, force: false });
  const plan = (configuration: Record<string, unknown>) =>
    server.request('/api/project/main/runs/get_plan', { run_spec: { configuration } });

  it("publishes a service on the project's default gateway, a named one, or the server's proxy", async () => {
    const onDefault = await apply(service('svc-default'));
    expect(onDefault.status, JSON.stringify(onDefault.body)).toBe(200);
    expect(onDefault.body.service.url).toBe('https://svc-default.a.test/');
    const named = await apply(service('svc-named', { gateway: 'gw-b', https: false }));
    expect(named.body.service.url).toBe('http://svc-named.main.b.test/');
    const proxied = await apply(service('svc-proxied', { gateway: false }));
    expect(proxied.body.service.url).toBe('/proxy/services/main/svc-proxied/');
  });

  it("follows dstack's https: auto is HTTPS when the gateway has a certificate; true needs one", async () => {
    const withCertificate = await apply(service('svc-auto-a', { https: 'auto' }));
    expect(withCertificate.status, JSON.stringify(withCertificate.body)).toBe(200);
    expect(withCertificate.body.service.url).toBe('https://svc-auto-a.a.test/');
    const without = await apply(service('svc-auto-b', { gateway: 'gw-b', https: 'auto' }));
    expect(without.body.service.url).toBe('http://svc-auto-b.main.b.test/');
    // What `runs/get` and `runs/list` give later is what apply decided.
    const got = await server.request('/api/project/main/runs/get', { run_name: 'svc-auto-b' });
    expect(got.body.service.url).toBe('http://svc-auto-b.main.b.test/');
    for (const https of [true, undefined]) {
      const refused = await plan(service('svc-https', { gateway: 'gw-b', https }));
      expect(refused.status).toBe(400);
      expect(refused.body.detail[0].msg).toContain('https: gateway gw-b has no certificate');
      expect(refused.body.detail[0].fields).toEqual([['run_spec', 'configuration', 'https']]);
    }
  });

  it('refuses to move a running service to another gateway or to the server proxy', async () => {
    for (const gateway of ['gw-b', false]) {
      const moved = await apply(service('svc-default', { gateway, https: 'auto' }));
      expect(moved.status).toBe(400);
      expect(moved.body.detail[0].msg).toContain('a running service cannot move');
    }
    // The same gateway again is an ordinary update.
    expect((await apply(service('svc-default', { gateway: 'gw-a', env: { A: '1' } }))).status).toBe(200);
  });

  it('refuses a gateway that does not exist or does not run, at plan and apply, naming gateway', async () => {
    for (const [gateway, message] of [
      ['missing', 'Gateway missing does not exist in project main'],
      ['gw-c', 'Gateway gw-c is provisioning, not running'],
      ['other/gw-a', 'gateway other/gw-a: gateways of other projects are not supported yet'],
    ] as const) {
      for (const answer of [
        await plan(service('svc-x', { gateway })),
        await apply(service('svc-x', { gateway })),
      ]) {
        expect(answer.status).toBe(400);
        expect(answer.body.detail[0].msg).toContain(message);
        expect(answer.body.detail[0].fields).toEqual([['run_spec', 'configuration', 'gateway']]);
      }
    }
  });

  it('takes scaling and rate limits on a gateway, which counts and limits requests as the server proxy does', async () => {
    const scaling = await plan(service('svc-s', { replicas: '0..2', scaling: { metric: 'rps', target: 1 } }));
    expect(scaling.status, JSON.stringify(scaling.body)).toBe(200);
    const grouped = await plan(
      service('svc-g', {
        commands: [],
        replicas: [
          { count: 1, commands: ['true'] },
          { count: '0..2', scaling: { metric: 'rps', target: 1 }, commands: ['true'] },
        ],
      }),
    );
    expect(grouped.status, JSON.stringify(grouped.body)).toBe(200);
    const limited = await plan(service('svc-r', { rate_limits: [{ rps: 1 }] }));
    expect(limited.status, JSON.stringify(limited.body)).toBe(200);
  });

  it('lists gateways with their default, switches it, and forgets a deleted one', async () => {
    const defaults = async () =>
      Object.fromEntries(
        (await server.request('/api/project/main/gateways/list', {})).body.map(
          (gateway: { name: string; default: boolean }) => [gateway.name, gateway.default],
        ),
      );
    expect(await defaults()).toEqual({ 'gw-a': true, 'gw-b': false, 'gw-c': false });
    expect((await server.request('/api/project/main/gateways/set_default', { name: 'gw-b' })).status).toBe(
      200,
    );
    expect(await defaults()).toEqual({ 'gw-a': false, 'gw-b': true, 'gw-c': false });
    expect((await server.request('/api/project/main/gateways/delete', { names: ['gw-b'] })).status).toBe(200);
    expect(await defaults()).toEqual({ 'gw-a': false, 'gw-c': false });
    const missing = await server.request('/api/project/main/gateways/get', { name: 'gw-b' });
    expect(missing.status).toBe(400);
    expect(missing.body.detail[0].code).toBe('resource_not_exists');
    // No default gateway now: `gateway: true` asks for one.
    const wanted = await plan(service('svc-y', { gateway: true }));
    expect(wanted.body.detail[0].msg).toContain('gateway: true, but project main has no default gateway');
    expect((await plan(service('svc-z'))).status).toBe(200);
  });

  it("refuses a backend without the 'gateways' capability, naming backend", async () => {
    const answer = await server.request('/api/project/main/gateways/create', {
      configuration: { type: 'gateway', backend: 'local', region: 'local', certificate: null },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0].msg).toContain('gateways are not supported by the local backend');
    expect(answer.body.detail[0].fields).toEqual([['configuration', 'backend']]);
  });
});
