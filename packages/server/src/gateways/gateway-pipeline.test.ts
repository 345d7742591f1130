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

  it('fails a gateway whose launch the backend refuses, with the reason', async () => {
    cloud.failNext('createGatewayReplica', () => new BackendError('no quota for gateways'));
    expect((await create('gw-refused')).status).toBe(200);
    await processGateways();
    expect(await get('gw-refused')).toMatchObject({
      status: 'failed',
      status_message: 'launching the gateway failed: no quota for gateways',
    });
  });
});
