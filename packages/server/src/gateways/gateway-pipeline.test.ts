/**
 * The gateway pipeline against the fake cloud (its gateway instances have addresses that never
 * route): a created gateway is launched once (`provisioning` with its address), a launch the
 * backend fails ends `failed` with the reason, and a deleted gateway has its instance terminated
 * before it is forgotten. Reaching a real agent is the AWS end-to-end test's.
 */
import { BackendError } from '@dstack/core';
import { createFakeBackend, FAKE_BACKEND_VALID_API_KEY, type FakeBackend } from '@dstack/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { Pipeline } from '../pipelines/pipeline.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { gatewayPipeline } from './gateway-pipeline.js';

describeEachDialect('the gateway pipeline', (getDb) => {
  let cloud: FakeBackend;
  let server: TestApp;

  beforeAll(async () => {
    cloud = createFakeBackend({ capabilities: ['create-instance', 'gateways'] });
    server = await createTestApp({
      dialect: getDb().dialect,
      routes: allRoutes,
      plugins: [cloud.plugin],
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } }],
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await server?.close();
    await cloud?.close();
  });

  const processGateways = () => new Pipeline(server.app, gatewayPipeline(server.app)).processDue();
  const create = (name: string) =>
    server.request('/api/project/main/gateways/create', {
      configuration: { type: 'gateway', name, backend: 'fake', region: 'fake-region-1', certificate: null },
    });
  const get = async (name: string) => (await server.request('/api/project/main/gateways/get', { name })).body;

  it('launches a created gateway once and terminates its instance when it is deleted', async () => {
    expect((await create('gw-ok')).status).toBe(200);
    await processGateways();
    const launched = await get('gw-ok');
    expect(launched).toMatchObject({
      status: 'provisioning',
      ip_address: expect.stringMatching(/^192\.0\.2\./),
    });
    expect(cloud.callsOf('createGatewayReplica')).toHaveLength(1);
    const [configuration] = cloud.callsOf('createGatewayReplica')[0]?.args ?? [];
    expect(configuration).toMatchObject({ project_name: 'main', region: 'fake-region-1', public_ip: true });
    // The launch hands the agent the token the server keeps, encrypted, for its management calls.
    const stored = await server.app.db
      .selectFrom('gateways')
      .select('agent_token')
      .where('name', '=', 'gw-ok')
      .executeTakeFirstOrThrow();
    const token = (configuration as { agent_token: string }).agent_token;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(stored.agent_token).not.toContain(token);
    expect(server.app.encryption.decrypt(stored.agent_token as string)).toBe(token);

    expect((await server.request('/api/project/main/gateways/delete', { names: ['gw-ok'] })).status).toBe(
      200,
    );
    await processGateways();
    const instance = cloud.gatewayInstances.get(launched.instance_id);
    expect(instance?.terminated).toBe(true);
    const row = await server.app.db
      .selectFrom('gateways')
      .select('deleted')
      .where('name', '=', 'gw-ok')
      .executeTakeFirstOrThrow();
    expect(row.deleted).toBe(1);

    // Its life in events, with the user who created and deleted it.
    const events = await server.request('/api/events/list', {
      target_gateways: [launched.id],
      ascending: true,
    });
    expect(
      events.body.map((event: { message: string; actor_user: string | null }) => [
        event.message,
        event.actor_user,
      ]),
    ).toEqual([
      ['Gateway created. Status: SUBMITTED', 'admin'],
      ['Gateway status changed SUBMITTED -> PROVISIONING', null],
      ['Gateway marked for deletion', 'admin'],
    ]);
  });

  it('gives a gateway created before gateways had tokens one at its launch', async () => {
    expect((await create('gw-legacy')).status).toBe(200);
    await server.app.db
      .updateTable('gateways')
      .set({ agent_token: null })
      .where('name', '=', 'gw-legacy')
      .execute();
    await processGateways();
    const [configuration] = cloud.callsOf('createGatewayReplica').at(-1)?.args ?? [];
    const stored = await server.app.db
      .selectFrom('gateways')
      .select('agent_token')
      .where('name', '=', 'gw-legacy')
      .executeTakeFirstOrThrow();
    expect(stored.agent_token).not.toBeNull();
    expect((configuration as { agent_token: string }).agent_token).toBe(
      server.app.encryption.decrypt(stored.agent_token as string),
    );
    await server.request('/api/project/main/gateways/delete', { names: ['gw-legacy'] });
    await processGateways();
  });

  it('fails a gateway whose launch the backend refuses, with the reason', async () => {
    cloud.failNext('createGatewayReplica', () => new BackendError('no quota for gateways'));
    expect((await create('gw-refused')).status).toBe(200);
    await processGateways();
    expect(await get('gw-refused')).toMatchObject({
      status: 'failed',
      status_message: 'launching the gateway failed: no quota for gateways',
    });
  });

  it("applies a gateway as dstack's CLI does: get_plan, then apply with every unset field null", async () => {
    // What dstack 0.21's client sends: the whole model, unset fields null, the certificate given.
    const configuration = {
      type: 'gateway',
      name: 'gw-dstack',
      backend: 'fake',
      region: 'fake-region-1',
      domain: null,
      default: false,
      instance_type: null,
      router: null,
      public_ip: true,
      certificate: null,
      tags: null,
    };
    const spec = { configuration, configuration_path: 'gateway.dstack.yml' };
    const plan = await server.request('/api/project/main/gateways/get_plan', { spec });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    expect(plan.body).toMatchObject({ action: 'create', current_resource: null, spec });
    const applied = await server.request('/api/project/main/gateways/apply', {
      plan: { spec, current_resource: null },
      force: false,
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body).toMatchObject({
      name: 'gw-dstack',
      status: 'submitted',
      configuration: { certificate: null },
    });

    // Applied again unchanged: the same gateway; changed: refused, as dstack cannot update it in place.
    const again = await server.request('/api/project/main/gateways/get_plan', { spec });
    expect(again.body).toMatchObject({ action: 'update', current_resource: { id: applied.body.id } });
    const same = await server.request('/api/project/main/gateways/apply', {
      plan: { spec, current_resource: again.body.current_resource },
      force: false,
    });
    expect(same.body.id).toBe(applied.body.id);
    const stale = await server.request('/api/project/main/gateways/apply', {
      plan: { spec, current_resource: null },
      force: false,
    });
    expect(stale.status).toBe(400);
    expect(stale.body.detail[0].msg).toContain('Resource has been changed');
    const moved = { ...spec, configuration: { ...configuration, region: 'fake-region-2' } };
    const changed = await server.request('/api/project/main/gateways/apply', {
      plan: { spec: moved, current_resource: again.body.current_resource },
      force: false,
    });
    expect(changed.status).toBe(400);
    expect(changed.body.detail[0].msg).toContain('cannot be updated in place (changed: region)');
    // dstack's CLI re-creates it on a `create` plan: it deletes the gateway, then applies.
    const movedPlan = await server.request('/api/project/main/gateways/get_plan', { spec: moved });
    expect(movedPlan.body).toMatchObject({ action: 'create', current_resource: { id: applied.body.id } });

    // A new domain and default change in place, as in dstack, with an event naming them.
    const renamed = { ...spec, configuration: { ...configuration, domain: 'gw.example.com', default: true } };
    const renamedPlan = await server.request('/api/project/main/gateways/get_plan', { spec: renamed });
    expect(renamedPlan.body.action).toBe('update');
    const updated = await server.request('/api/project/main/gateways/apply', {
      plan: { spec: renamed, current_resource: renamedPlan.body.current_resource },
      force: false,
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toMatchObject({
      id: applied.body.id,
      wildcard_domain: 'gw.example.com',
      default: true,
      configuration: { domain: 'gw.example.com', default: true },
    });
    const events = await server.request('/api/events/list', { target_gateways: [applied.body.id] });
    expect(
      events.body.map((event: { message: string }) => event.message),
      JSON.stringify(events.body),
    ).toContain('Gateway updated. Changed fields: default, domain');
    expect((await server.request('/api/project/main/gateways/delete', { names: ['gw-dstack'] })).status).toBe(
      200,
    );
  });
});
