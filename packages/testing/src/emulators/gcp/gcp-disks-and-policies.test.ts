/**
 * Persistent disks and resource policies of the GCP emulator through its REST API (no hosts, a
 * manual clock): the shapes dstack reads and the errors Compute answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GcpEmulator } from './gcp-emulator.js';
import {
  compute,
  instanceBody,
  type ManualClock,
  startTestEmulator,
  TEST_TIMELINE,
} from './gcp-emulator.test.helpers.js';

const ZONE = 'us-central1-a';
const OTHER_ZONE = 'us-central1-b';
const REGION = 'us-central1';

describe('GCP emulator: resource policies and persistent disks', () => {
  let emulator: GcpEmulator;
  let clock: ManualClock;
  let token: string;
  const call = (method: string, path: string, body?: unknown) => compute(emulator, token, method, path, body);

  afterEach(async () => {
    await emulator?.close();
  });

  async function start() {
    ({ emulator, clock, token } = await startTestEmulator());
  }

  async function runningInstance(name: string, zone: string, overrides: Record<string, unknown> = {}) {
    const insert = await call('POST', `zones/${zone}/instances`, instanceBody(name, zone, overrides));
    expect(insert.status, JSON.stringify(insert.body)).toBe(200);
    return insert;
  }

  it('makes a compact placement policy, places instances in it in one zone, and refuses what Compute refuses', async () => {
    await start();
    const policy = {
      name: 'dstack-main-cluster-pg-abcd1234',
      groupPlacementPolicy: { availabilityDomainCount: 1, collocation: 'COLLOCATED' },
    };
    const insert = await call('POST', `regions/${REGION}/resourcePolicies`, policy);
    expect(insert.status).toBe(200);
    expect(insert.body).toMatchObject({
      kind: 'compute#operation',
      operationType: 'insert',
      status: 'DONE',
      targetLink: expect.stringMatching(
        /\/regions\/us-central1\/resourcePolicies\/dstack-main-cluster-pg-abcd1234$/,
      ),
    });
    const operation = await call('GET', `regions/${REGION}/operations/${insert.body.name}`);
    expect(operation.body.status).toBe('DONE');

    const again = await call('POST', `regions/${REGION}/resourcePolicies`, policy);
    expect(again.status).toBe(409);
    expect(again.body.error.errors[0].reason).toBe('alreadyExists');

    const got = await call('GET', `regions/${REGION}/resourcePolicies/${policy.name}`);
    expect(got.body).toMatchObject({
      kind: 'compute#resourcePolicy',
      name: policy.name,
      groupPlacementPolicy: { collocation: 'COLLOCATED', availabilityDomainCount: 1 },
      status: 'READY',
    });
    expect((await call('GET', `regions/${REGION}/resourcePolicies`)).body.items).toHaveLength(1);
    expect((await call('GET', `regions/europe-west4/resourcePolicies`)).body.items).toEqual([]);

    const reference = `projects/${emulator.project}/regions/${REGION}/resourcePolicies/${policy.name}`;
    await runningInstance('node-0', ZONE, { resourcePolicies: [reference] });
    const node = await call('GET', `zones/${ZONE}/instances/node-0`);
    expect(node.body.resourcePolicies).toEqual([expect.stringMatching(new RegExp(`/${reference}$`))]);
    // Another zone of the region: a compact placement is one zone.
    const elsewhere = await call(
      'POST',
      `zones/${OTHER_ZONE}/instances`,
      instanceBody('node-1', OTHER_ZONE, { resourcePolicies: [reference] }),
    );
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.message).toMatch(/resourcePolicies\[0\].*one zone.*node-0/);
    // Another region's policy, and one that does not exist.
    const wrongRegion = await call(
      'POST',
      `zones/europe-west4-a/instances`,
      instanceBody('node-2', 'europe-west4-a', { resourcePolicies: [reference] }),
    );
    expect(wrongRegion.status).toBe(400);
    expect(wrongRegion.body.error.message).toMatch(/same region/);
    const missing = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('node-3', ZONE, { resourcePolicies: [`${reference}-nope`] }),
    );
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/was not found/);
    expect(emulator.state().resourcePolicies).toEqual([
      { name: policy.name, region: REGION, collocation: 'COLLOCATED', instances: ['node-0'] },
    ]);

    // In use: the message dstack matches.
    const inUse = await call('DELETE', `regions/${REGION}/resourcePolicies/${policy.name}`);
    expect(inUse.status).toBe(400);
    expect(inUse.body.error.errors[0].reason).toBe('resourceInUseByAnotherResource');
    expect(inUse.body.error.message).toContain('is already being used by');
    await call('DELETE', `zones/${ZONE}/instances/node-0`);
    // Still in use while the instance stops.
    expect((await call('DELETE', `regions/${REGION}/resourcePolicies/${policy.name}`)).status).toBe(400);
    clock.advance(TEST_TIMELINE.stoppingMs);
    const deleted = await call('DELETE', `regions/${REGION}/resourcePolicies/${policy.name}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.operationType).toBe('delete');
    expect((await call('DELETE', `regions/${REGION}/resourcePolicies/${policy.name}`)).status).toBe(404);
    expect((await call('GET', `regions/${REGION}/resourcePolicies/${policy.name}`)).status).toBe(404);
    expect(emulator.state().resourcePolicies).toEqual([]);
    const notPlacement = await call('POST', `regions/${REGION}/resourcePolicies`, {
      name: 'x',
      groupPlacementPolicy: { collocation: 'SPREAD' },
    });
    expect(notPlacement.status).toBe(400);
    expect(notPlacement.body.error.message).toContain('groupPlacementPolicy.collocation');
  });

  it('fails inserts into a policy with a capacity fault, in the operation, as a zone shortage', async () => {
    await start();
    await call('POST', `regions/${REGION}/resourcePolicies`, {
      name: 'pg',
      groupPlacementPolicy: { collocation: 'COLLOCATED' },
    });
    emulator.addFault({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', resourcePolicy: 'pg' });
    // Outside the policy the fault does not apply.
    await runningInstance('free', ZONE);
    const insert = await runningInstance('placed', ZONE, {
      resourcePolicies: ['projects/p/regions/us-central1/resourcePolicies/pg'],
    });
    clock.advance(TEST_TIMELINE.provisioningMs);
    const operation = await call('GET', `zones/${ZONE}/operations/${insert.body.name}`);
    expect(operation.body.status).toBe('DONE');
    expect(operation.body.error.errors[0].code).toBe('ZONE_RESOURCE_POOL_EXHAUSTED');
    expect((await call('GET', `zones/${ZONE}/instances/free`)).body.status).toBe('STAGING');
  });

  it('creates, attaches, detaches and deletes persistent disks with their users, and refuses what Compute refuses', async () => {
    await start();
    const insert = await call('POST', `zones/${ZONE}/disks`, {
      name: 'dstack-main-data-abcd1234',
      sizeGb: '100',
      type: `zones/${ZONE}/diskTypes/pd-balanced`,
      labels: { owner: 'dstack', dstack_name: 'data' },
    });
    expect(insert.status).toBe(200);
    expect(insert.body).toMatchObject({
      operationType: 'insert',
      targetLink: expect.stringMatching(/\/zones\/us-central1-a\/disks\/dstack-main-data-abcd1234$/),
    });
    expect((await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`)).body.status).toBe('CREATING');
    expect(
      (await call('POST', `zones/${ZONE}/disks`, { name: 'dstack-main-data-abcd1234', sizeGb: '10' })).status,
    ).toBe(409);
    expect(
      (
        await call('POST', `zones/${ZONE}/disks`, {
          name: 'tiny',
          sizeGb: '1',
          type: `zones/${ZONE}/diskTypes/pd-balanced`,
        })
      ).body.error.message,
    ).toContain("'resource.sizeGb'");
    expect(
      (
        await call('POST', `zones/${ZONE}/disks`, {
          name: 'odd',
          sizeGb: '10',
          type: `zones/${ZONE}/diskTypes/pd-nope`,
        })
      ).body.error.message,
    ).toContain("'resource.type'");
    clock.advance(TEST_TIMELINE.operationPendingMs);
    expect((await call('GET', `zones/${ZONE}/operations/${insert.body.name}`)).body.status).toBe('DONE');
    const disk = await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`);
    expect(disk.body).toMatchObject({
      kind: 'compute#disk',
      name: 'dstack-main-data-abcd1234',
      sizeGb: '100',
      status: 'READY',
      type: expect.stringMatching(/\/zones\/us-central1-a\/diskTypes\/pd-balanced$/),
      labels: { owner: 'dstack', dstack_name: 'data' },
    });
    expect(disk.body.users).toBeUndefined();
    expect(
      (await call('GET', `zones/${ZONE}/disks`)).body.items.map((each: { name: string }) => each.name),
    ).toEqual(['dstack-main-data-abcd1234']);

    await runningInstance('vm-a', ZONE);
    await runningInstance('vm-b', ZONE);
    await runningInstance('vm-c', OTHER_ZONE);
    const source = disk.body.selfLink as string;
    const attach = await call('POST', `zones/${ZONE}/instances/vm-a/attachDisk`, {
      source,
      deviceName: 'pd-dstack-main-data-abcd1234',
      autoDelete: false,
    });
    expect(attach.status).toBe(200);
    expect(attach.body).toMatchObject({
      operationType: 'attachDisk',
      targetLink: expect.stringMatching(/\/instances\/vm-a$/),
    });
    clock.advance(TEST_TIMELINE.operationPendingMs);
    expect((await call('GET', `zones/${ZONE}/operations/${attach.body.name}`)).body.status).toBe('DONE');
    const attached = await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`);
    expect(attached.body.users).toEqual([expect.stringMatching(/\/zones\/us-central1-a\/instances\/vm-a$/)]);
    const vm = await call('GET', `zones/${ZONE}/instances/vm-a`);
    expect(vm.body.disks[1]).toMatchObject({
      deviceName: 'pd-dstack-main-data-abcd1234',
      index: 1,
      boot: false,
      source,
      autoDelete: false,
    });
    expect(emulator.state().disks).toEqual([
      {
        name: 'dstack-main-data-abcd1234',
        zone: ZONE,
        sizeGb: 100,
        type: 'pd-balanced',
        status: 'READY',
        attachedTo: { instance: 'vm-a', deviceName: 'pd-dstack-main-data-abcd1234' },
      },
    ]);

    const elsewhere = await call('POST', `zones/${ZONE}/instances/vm-b/attachDisk`, { source });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.errors[0].reason).toBe('resourceInUseByAnotherResource');
    expect(elsewhere.body.error.message).toMatch(/already being used by .*instances\/vm-a/);
    const otherZone = await call('POST', `zones/${OTHER_ZONE}/instances/vm-c/attachDisk`, { source });
    expect(otherZone.status).toBe(400);
    expect(otherZone.body.error.message).toMatch(/same zone as the instance/);
    expect(
      (await call('POST', `zones/${ZONE}/instances/vm-b/attachDisk`, { source: `zones/${ZONE}/disks/nope` }))
        .status,
    ).toBe(404);
    const busy = await call('DELETE', `zones/${ZONE}/disks/dstack-main-data-abcd1234`);
    expect(busy.status).toBe(400);
    expect(busy.body.error.message).toMatch(/already being used by .*instances\/vm-a/);

    expect(
      (await call('POST', `zones/${ZONE}/instances/vm-a/detachDisk?deviceName=nope`)).body.error.message,
    ).toMatch(/No attached disk found with device name 'nope'/);
    const detach = await call(
      'POST',
      `zones/${ZONE}/instances/vm-a/detachDisk?deviceName=pd-dstack-main-data-abcd1234`,
    );
    expect(detach.body.operationType).toBe('detachDisk');
    expect((await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`)).body.users).toBeUndefined();
    // The next instance takes it; deleting that instance detaches it.
    expect(
      (await call('POST', `zones/${ZONE}/instances/vm-b/attachDisk`, { source, deviceName: 'data' })).status,
    ).toBe(200);
    await call('DELETE', `zones/${ZONE}/instances/vm-b`);
    expect(emulator.state().disks[0]?.attachedTo).toBeNull();

    const deleted = await call('DELETE', `zones/${ZONE}/disks/dstack-main-data-abcd1234`);
    expect(deleted.body.operationType).toBe('delete');
    expect((await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`)).body.status).toBe('DELETING');
    clock.advance(TEST_TIMELINE.operationPendingMs);
    expect((await call('GET', `zones/${ZONE}/disks/dstack-main-data-abcd1234`)).status).toBe(404);
    expect(emulator.state().disks).toEqual([]);
  });
});
