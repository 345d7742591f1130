import { afterEach, describe, expect, it } from 'vitest';
import type { GcpEmulator } from './gcp-emulator.js';
import {
  compute,
  instanceBody,
  RecordingHosts,
  settle,
  startTestEmulator,
  TEST_TIMELINE,
} from './gcp-emulator.test.helpers.js';
import { parseGcpFault, parseGcpFaultFlag } from './gcp-emulator-faults.js';

let emulator: GcpEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof startTestEmulator>[0] = {}) {
  const started = await startTestEmulator(options);
  emulator = started.emulator;
  const call = (method: string, path: string, body?: unknown) =>
    compute(started.emulator, started.token, method, path, body);
  return { ...started, call };
}

const ZONE = 'us-central1-a';

describe('capacity', () => {
  it('ZONE_RESOURCE_POOL_EXHAUSTED arrives late in the operation, after it was seen RUNNING; the instance then 404s', async () => {
    const hosts = new RecordingHosts();
    const { call, clock } = await start({
      hosts,
      faults: [
        {
          code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
          machineType: 'n1-standard-4',
          zone: ZONE,
          provisioningModel: 'STANDARD',
          delayMs: 45_000,
        },
      ],
    });
    const insert = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-late', ZONE));
    expect(insert).toMatchObject({ status: 200, body: { status: 'PENDING' } });
    const operation = `zones/${ZONE}/operations/${insert.body.name}`;
    clock.advance(TEST_TIMELINE.operationPendingMs);
    expect((await call('GET', operation)).body.status).toBe('RUNNING');
    // Past dstack's 30 s wait the operation is still RUNNING and the instance PROVISIONING.
    clock.advance(30_000);
    expect((await call('GET', operation)).body).toMatchObject({ status: 'RUNNING' });
    expect((await call('GET', `zones/${ZONE}/instances/dstack-late`)).body.status).toBe('PROVISIONING');
    clock.advance(15_000);
    const failed = await call('GET', operation);
    expect(failed.body).toMatchObject({
      status: 'DONE',
      httpErrorStatusCode: 503,
      httpErrorMessage: 'SERVICE UNAVAILABLE',
      error: {
        errors: [
          {
            code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
            message: expect.stringContaining(
              `The zone 'projects/${emulator?.project}/zones/${ZONE}' does not have enough resources`,
            ),
            errorDetails: [
              {
                errorInfo: {
                  reason: 'resource_availability',
                  metadatas: { zone: ZONE, vmType: 'n1-standard-4' },
                },
              },
            ],
          },
        ],
      },
    });
    expect((await call('GET', `zones/${ZONE}/instances/dstack-late`)).status).toBe(404);
    expect(hosts.launches).toEqual([]);
    expect(emulator?.state().instances).toEqual([]);

    // The next zone, the spot model and another type still have capacity (the fault is sticky there).
    const other = await call(
      'POST',
      'zones/us-central1-b/instances',
      instanceBody('dstack-late', 'us-central1-b'),
    );
    const spot = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-late-spot', ZONE, { scheduling: { provisioningModel: 'SPOT' } }),
    );
    const again = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-late-2', ZONE));
    clock.advance(60_000);
    expect(
      (await call('GET', `zones/us-central1-b/operations/${other.body.name}`)).body.error,
    ).toBeUndefined();
    expect((await call('GET', `zones/${ZONE}/operations/${spot.body.name}`)).body.error).toBeUndefined();
    expect((await call('GET', `zones/${ZONE}/operations/${again.body.name}`)).body.error.errors[0].code).toBe(
      'ZONE_RESOURCE_POOL_EXHAUSTED',
    );
  });

  it('failNextLaunchWithNoCapacity fails the next insert only', async () => {
    const { call, clock } = await start();
    emulator?.failNextLaunchWithNoCapacity();
    const first = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-n1', ZONE));
    const second = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-n2', ZONE));
    clock.advance(TEST_TIMELINE.provisioningMs);
    expect((await call('GET', `zones/${ZONE}/operations/${first.body.name}`)).body.error.errors[0].code).toBe(
      'ZONE_RESOURCE_POOL_EXHAUSTED',
    );
    expect((await call('GET', `zones/${ZONE}/operations/${second.body.name}`)).body.error).toBeUndefined();
  });
});

describe('quota', () => {
  it('QUOTA_EXCEEDED by fault names the GPU metric of the region; a quota of 0 does the same', async () => {
    const { call, clock } = await start({
      faults: [{ code: 'QUOTA_EXCEEDED', provisioningModel: 'SPOT' }],
      quotas: { NVIDIA_L4_GPUS: 0 },
    });
    const spot = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-q1', ZONE, { scheduling: { provisioningModel: 'SPOT' } }),
    );
    const l4 = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-q2', ZONE, {
        machineType: `zones/${ZONE}/machineTypes/g2-standard-4`,
        guestAccelerators: undefined,
      }),
    );
    const t4 = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-q3', ZONE));
    clock.advance(TEST_TIMELINE.provisioningMs);
    expect((await call('GET', `zones/${ZONE}/operations/${spot.body.name}`)).body).toMatchObject({
      status: 'DONE',
      httpErrorStatusCode: 403,
      error: {
        errors: [
          {
            code: 'QUOTA_EXCEEDED',
            message: "Quota 'PREEMPTIBLE_NVIDIA_T4_GPUS' exceeded.  Limit: 0.0 in region us-central1.",
          },
        ],
      },
    });
    expect(
      (await call('GET', `zones/${ZONE}/operations/${l4.body.name}`)).body.error.errors[0],
    ).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      message: "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-central1.",
      errorDetails: [
        {
          quotaInfo: {
            metricName: 'compute.googleapis.com/nvidia_l4_gpus',
            dimensions: { region: 'us-central1' },
            limit: 0,
          },
        },
      ],
    });
    expect((await call('GET', `zones/${ZONE}/operations/${t4.body.name}`)).body.error).toBeUndefined();
    // Usage counts: the T4 instance is in the region's quotas.
    const region = await call('GET', 'regions/us-central1');
    expect(region.body.quotas).toContainEqual({ metric: 'NVIDIA_T4_GPUS', limit: 64, usage: 1 });
  });
});

describe('other faults', () => {
  it('RATE_LIMIT_EXCEEDED answers 429 rateLimitExceeded (every other request from the command line)', async () => {
    const { call } = await start({ faults: [parseGcpFaultFlag('RATE_LIMIT_EXCEEDED')] });
    const first = await call('GET', 'zones');
    const second = await call('GET', 'zones');
    expect([first.status, second.status]).toEqual([200, 429]);
    expect(second.body).toMatchObject({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        errors: [{ reason: 'rateLimitExceeded', domain: 'usageLimits' }],
      },
    });
  });

  it('SLOW_NAT_IP: the natIP appears delayMs after RUNNING', async () => {
    const { call, clock } = await start({ faults: [{ code: 'SLOW_NAT_IP', delayMs: 20_000 }] });
    await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-ip', ZONE));
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs);
    const running = await call('GET', `zones/${ZONE}/instances/dstack-ip`);
    expect(running.body.status).toBe('RUNNING');
    expect(running.body.networkInterfaces[0].accessConfigs[0].natIP).toBeUndefined();
    clock.advance(20_000);
    expect(
      (await call('GET', `zones/${ZONE}/instances/dstack-ip`)).body.networkInterfaces[0].accessConfigs[0]
        .natIP,
    ).toBeDefined();
  });

  it('PREEMPTION takes a spot instance back afterRunningMs after it started running', async () => {
    const hosts = new RecordingHosts();
    const { call, clock } = await start({ hosts, faults: [{ code: 'PREEMPTION', afterRunningMs: 60_000 }] });
    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-p', ZONE, { scheduling: { provisioningModel: 'SPOT' } }),
    );
    await settle();
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs + 59_000);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-p`)).body.status).toBe('RUNNING');
    clock.advance(1_000);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-p`)).body.status).toBe('STOPPING');
    await settle();
    expect(hosts.terminated).toHaveLength(1);
    const operations = await call('GET', `zones/${ZONE}/operations`);
    expect(operations.body.items.at(-1)).toMatchObject({ operationType: 'compute.instances.preempted' });
  });

  it('PREEMPTION counts afterRunningMs from when a late host came up', async () => {
    const hosts = new RecordingHosts('manual');
    const { call, clock } = await start({ hosts, faults: [{ code: 'PREEMPTION', afterRunningMs: 60_000 }] });
    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-late', ZONE, { scheduling: { provisioningModel: 'SPOT' } }),
    );
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs + 120_000);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-late`)).body.status).toBe('STAGING');

    await hosts.finishLaunch(hosts.launches[0]?.instanceId ?? '');
    clock.advance(59_999);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-late`)).body.status).toBe('RUNNING');
    clock.advance(1);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-late`)).body.status).toBe('STOPPING');
    await settle();
    expect(hosts.terminated).toHaveLength(1);
  });

  it('faults over HTTP: add, list, remove; bad faults name the field', async () => {
    const { call, clock } = await start();
    const added = await fetch(`${emulator?.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', machineType: 'n1-standard-4' }),
    });
    expect(added.status).toBe(201);
    const fault = (await added.json()) as { id: string };
    const insert = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-h1', ZONE));
    clock.advance(TEST_TIMELINE.provisioningMs);
    expect(
      (await call('GET', `zones/${ZONE}/operations/${insert.body.name}`)).body.error.errors[0].code,
    ).toBe('ZONE_RESOURCE_POOL_EXHAUSTED');
    const listed = (await (await fetch(`${emulator?.url}/_emulator/faults`)).json()) as {
      faults: { id: string; fired: number }[];
    };
    expect(listed.faults).toMatchObject([{ id: fault.id, fired: 1 }]);
    expect((await fetch(`${emulator?.url}/_emulator/faults/${fault.id}`, { method: 'DELETE' })).status).toBe(
      200,
    );
    const bad = await fetch(`${emulator?.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', provisioningModel: 'spot' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/provisioningModel/);
  });

  it('parses --fault flags and rejects bad ones naming the problem', () => {
    expect(parseGcpFaultFlag('ZONE_RESOURCE_POOL_EXHAUSTED:g2-standard-4')).toEqual({
      code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
      machineType: 'g2-standard-4',
    });
    expect(() => parseGcpFaultFlag('NOPE')).toThrow(/unknown code NOPE/);
    expect(() => parseGcpFaultFlag('QUOTA_EXCEEDED:a:b')).toThrow(/CODE\[:MACHINE_TYPE\]/);
    expect(() => parseGcpFault({ code: 'SLOW_NAT_IP', delayMs: -1 })).toThrow(/delayMs/);
  });
});
