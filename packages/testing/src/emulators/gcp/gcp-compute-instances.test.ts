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

describe('instances and zone operations', () => {
  it('insert → operation PENDING → RUNNING → DONE; instance PROVISIONING → STAGING → RUNNING with its natIP', async () => {
    const { call, clock } = await start();
    const insert = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-a1', ZONE));
    expect(insert.status).toBe(200);
    expect(insert.body).toMatchObject({
      kind: 'compute#operation',
      operationType: 'insert',
      status: 'PENDING',
      targetLink: `https://www.googleapis.com/compute/v1/projects/${emulator?.project}/zones/${ZONE}/instances/dstack-a1`,
      zone: `https://www.googleapis.com/compute/v1/projects/${emulator?.project}/zones/${ZONE}`,
    });
    expect(insert.body.name).toMatch(/^operation-\d+-[0-9a-f]{13}-[0-9a-f]{8}-[0-9a-f]{8}$/);
    expect(insert.body.error).toBeUndefined();
    const operation = `zones/${ZONE}/operations/${insert.body.name}`;
    const instance = `zones/${ZONE}/instances/dstack-a1`;

    expect((await call('GET', instance)).body.status).toBe('PROVISIONING');
    clock.advance(TEST_TIMELINE.operationPendingMs);
    expect((await call('GET', operation)).body.status).toBe('RUNNING');
    clock.advance(TEST_TIMELINE.provisioningMs - TEST_TIMELINE.operationPendingMs);
    const done = await call('GET', operation);
    expect(done.body).toMatchObject({ status: 'DONE', progress: 100 });
    expect(done.body.error).toBeUndefined();
    const staging = await call('GET', instance);
    expect(staging.body.status).toBe('STAGING');
    expect(staging.body.networkInterfaces[0].accessConfigs[0].natIP).toBeUndefined();

    clock.advance(TEST_TIMELINE.stagingMs);
    const running = await call('GET', instance);
    expect(running.body).toMatchObject({
      status: 'RUNNING',
      name: 'dstack-a1',
      machineType: expect.stringMatching(/\/zones\/us-central1-a\/machineTypes\/n1-standard-4$/),
      scheduling: { provisioningModel: 'STANDARD' },
      labels: { owner: 'dstack' },
      metadata: { items: [{ key: 'startup-script' }] },
    });
    expect(running.body.id).toMatch(/^\d+$/);
    expect(running.body.networkInterfaces[0].accessConfigs[0].natIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(running.body.networkInterfaces[0].networkIP).toMatch(/^10\./);
    const state = await fetch(`${emulator?.url}/_emulator/state`);
    expect(await state.json()).toEqual({
      instances: [
        { id: 'dstack-a1', type: 'n1-standard-4', zone: ZONE, market: 'STANDARD', state: 'RUNNING' },
      ],
      resourcePolicies: [],
      disks: [],
      reservations: [],
    });
    const listed = await call('GET', `zones/${ZONE}/instances`);
    expect(listed.body.items.map((each: { name: string }) => each.name)).toEqual(['dstack-a1']);
    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-b2', ZONE, { labels: { owner: 'someone' } }),
    );
    const names = async (filter: string) =>
      (await call('GET', `zones/${ZONE}/instances?filter=${encodeURIComponent(filter)}`)).body.items?.map(
        (each: { name: string }) => each.name,
      );
    expect(await names('labels.owner = "dstack"')).toEqual(['dstack-a1']);
    expect(await names('(status = RUNNING) (name != "dstack-b2")')).toEqual(['dstack-a1']);
    expect(await names('name eq dstack-.*')).toEqual(['dstack-a1', 'dstack-b2']);
    expect(
      (await call('GET', `zones/${ZONE}/instances?filter=${encodeURIComponent('name ~ x')}`)).body,
    ).toMatchObject({
      error: { code: 400, message: expect.stringContaining("'filter'") },
    });
  });

  it('a second insert of the same name in the zone is 409 alreadyExists; another zone or a repeated requestId is not', async () => {
    const { call } = await start();
    expect((await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-same', ZONE))).status).toBe(
      200,
    );
    const again = await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-same', ZONE));
    expect(again).toMatchObject({
      status: 409,
      body: {
        error: {
          code: 409,
          errors: [{ reason: 'alreadyExists', domain: 'global' }],
          message: `The resource 'projects/${emulator?.project}/zones/${ZONE}/instances/dstack-same' already exists`,
        },
      },
    });
    expect(emulator?.launchedMachineCount()).toBe(1);
    const other = await call(
      'POST',
      'zones/us-central1-b/instances',
      instanceBody('dstack-same', 'us-central1-b'),
    );
    expect(other.status).toBe(200);

    const first = await call(
      'POST',
      `zones/${ZONE}/instances?requestId=r-1`,
      instanceBody('dstack-req', ZONE),
    );
    const retried = await call(
      'POST',
      `zones/${ZONE}/instances?requestId=r-1`,
      instanceBody('dstack-req', ZONE),
    );
    expect(retried.body.name).toBe(first.body.name);
    expect(emulator?.launchedMachineCount()).toBe(3);
  });

  it('sync errors: unknown machine type or accelerator in the zone is 404, too many cards 400, unknown image 404', async () => {
    const { call } = await start();
    const badType = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('x1', ZONE, { machineType: `zones/${ZONE}/machineTypes/n9-huge` }),
    );
    expect(badType).toMatchObject({ status: 404, body: { error: { errors: [{ reason: 'notFound' }] } } });
    const offered = new Set(
      emulator?.data.acceleratorOfferings
        .filter((each) => each.acceleratorType === 'nvidia-tesla-p4')
        .map((each) => each.zone),
    );
    const zoneWithout = emulator?.data.zones.find(
      (zone) => !offered.has(zone.name) && emulator?.data.machineOffering('n1-standard-4', zone.name),
    );
    expect(zoneWithout).toBeDefined();
    const missing = await call(
      'POST',
      `zones/${zoneWithout?.name}/instances`,
      instanceBody('x3', zoneWithout?.name ?? '', {
        guestAccelerators: [{ acceleratorType: 'nvidia-tesla-p4', acceleratorCount: 1 }],
      }),
    );
    expect(missing).toMatchObject({
      status: 404,
      body: {
        error: { message: expect.stringContaining("Accelerator type 'nvidia-tesla-p4' does not exist") },
      },
    });
    const tooMany = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('x4', ZONE, {
        guestAccelerators: [{ acceleratorType: 'nvidia-tesla-t4', acceleratorCount: 8 }],
      }),
    );
    expect(tooMany).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining('acceleratorCount') } },
    });
    const image = instanceBody('x5', ZONE);
    image.disks[0] = {
      ...image.disks[0],
      initializeParams: {
        ...image.disks[0]?.initializeParams,
        sourceImage: 'projects/dstack/global/images/dstack-0.0.1',
      },
    } as (typeof image.disks)[0];
    expect((await call('POST', `zones/${ZONE}/instances`, image)).status).toBe(404);
    const badName = await call('POST', `zones/${ZONE}/instances`, instanceBody('Bad_Name', ZONE));
    expect(badName).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining("'resource.name'") } },
    });
  });

  it('delete: STOPPING → TERMINATED → 404; a delete of a gone instance is 404', async () => {
    const hosts = new RecordingHosts();
    const { call, clock } = await start({ hosts });
    await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-del', ZONE));
    await settle();
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs);
    const instance = `zones/${ZONE}/instances/dstack-del`;
    expect((await call('GET', instance)).body.status).toBe('RUNNING');
    const deletion = await call('DELETE', instance);
    expect(deletion.body).toMatchObject({ operationType: 'delete', status: 'RUNNING' });
    expect((await call('GET', instance)).body.status).toBe('STOPPING');
    await settle();
    expect(hosts.terminated).toEqual([hosts.launches[0]?.instanceId]);
    clock.advance(TEST_TIMELINE.stoppingMs);
    expect((await call('GET', `zones/${ZONE}/operations/${deletion.body.name}`)).body.status).toBe('DONE');
    expect((await call('GET', instance)).body.status).toBe('TERMINATED');
    clock.advance(TEST_TIMELINE.terminatedVisibleMs);
    expect(await call('GET', instance)).toMatchObject({
      status: 404,
      body: { error: { errors: [{ reason: 'notFound' }] } },
    });
    expect((await call('DELETE', instance)).status).toBe(404);
    expect(emulator?.state()).toEqual({ instances: [], resourcePolicies: [], disks: [], reservations: [] });
    // The name is free again.
    expect((await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-del', ZONE))).status).toBe(
      200,
    );
  });

  it('hosts: launch receives the exact startup script; natIP is the host address', async () => {
    const hosts = new RecordingHosts();
    const { call, clock } = await start({ hosts });
    const script = '#!/bin/bash\nset -e\necho "dstack shim $((1 + 1))" > /tmp/out\n';
    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-h', ZONE, {
        metadata: {
          items: [
            { key: 'ssh-keys', value: 'ubuntu:ssh-ed25519 AAAA' },
            { key: 'startup-script', value: script },
          ],
        },
      }),
    );
    await settle();
    // dstack's images have Docker and dstack's images pre-pulled: the host is booted from such an image.
    expect(hosts.launches).toEqual([
      { instanceId: expect.stringMatching(/^\d+$/), userData: script, kind: 'dstack' },
    ]);
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs);
    const running = await call('GET', `zones/${ZONE}/instances/dstack-h`);
    expect(running.body.networkInterfaces[0].accessConfigs[0].natIP).toBe('127.0.10.1');
    expect(running.body.networkInterfaces[0].networkIP).toBe('127.0.10.1');

    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-cloud-init', ZONE, {
        metadata: { items: [{ key: 'user-data', value: '#cloud-config\nruncmd: [true]\n' }] },
      }),
    );
    await settle();
    expect(hosts.launches[1]?.userData).toBe('#cloud-config\nruncmd: [true]\n');
  });

  it('a host that never comes up keeps the instance STAGING', async () => {
    const hosts = new RecordingHosts('manual');
    const { call, clock } = await start({ hosts });
    await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-slow', ZONE));
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs * 3);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-slow`)).body.status).toBe('STAGING');
    await hosts.finishLaunch(hosts.launches[0]?.instanceId ?? '');
    expect((await call('GET', `zones/${ZONE}/instances/dstack-slow`)).body.status).toBe('RUNNING');
  });

  it('a delete while the host boots stops the host once its launch is over', async () => {
    const hosts = new RecordingHosts('manual');
    const { call, clock } = await start({ hosts });
    await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-early', ZONE));
    await call('DELETE', `zones/${ZONE}/instances/dstack-early`);
    await settle();
    // A terminate now could miss the host still being made, which would then be left behind.
    expect(hosts.terminated).toEqual([]);

    const hostId = hosts.launches[0]?.instanceId ?? '';
    await hosts.finishLaunch(hostId);
    expect(hosts.terminated).toEqual([hostId]);
    clock.advance(TEST_TIMELINE.stoppingMs);
    expect((await call('GET', `zones/${ZONE}/instances/dstack-early`)).body.status).toBe('TERMINATED');
  });
});

describe('spot', () => {
  it('SPOT instances are preempted: STOPPING → TERMINATED (kept), a compute.instances.preempted operation, host gone', async () => {
    const hosts = new RecordingHosts();
    const { call, clock } = await start({ hosts });
    await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-spot', ZONE, {
        scheduling: { provisioningModel: 'SPOT', instanceTerminationAction: 'STOP' },
      }),
    );
    await settle();
    clock.advance(TEST_TIMELINE.provisioningMs + TEST_TIMELINE.stagingMs);
    const instance = `zones/${ZONE}/instances/dstack-spot`;
    expect((await call('GET', instance)).body).toMatchObject({
      status: 'RUNNING',
      scheduling: { provisioningModel: 'SPOT', preemptible: true },
    });
    expect(emulator?.state().instances[0]?.market).toBe('SPOT');

    const preempt = await fetch(`${emulator?.url}/_emulator/instances/dstack-spot/preempt`, {
      method: 'POST',
    });
    expect(await preempt.json()).toEqual({ id: 'dstack-spot', state: 'STOPPING' });
    await settle();
    expect(hosts.terminated).toHaveLength(1);
    clock.advance(TEST_TIMELINE.stoppingMs + TEST_TIMELINE.terminatedVisibleMs * 2);
    expect((await call('GET', instance)).body.status).toBe('TERMINATED');
    const operations = await call('GET', `zones/${ZONE}/operations`);
    expect(operations.body.items.map((each: { operationType: string }) => each.operationType)).toEqual([
      'insert',
      'compute.instances.preempted',
    ]);
    expect(operations.body.items[1]).toMatchObject({
      status: 'DONE',
      statusMessage: 'Instance was preempted.',
      targetLink: expect.stringMatching(/instances\/dstack-spot$/),
    });
    // Deleting the preempted instance removes it.
    await call('DELETE', instance);
    clock.advance(TEST_TIMELINE.terminatedVisibleMs);
    expect((await call('GET', instance)).status).toBe(404);
  });

  it('an on-demand instance cannot be preempted', async () => {
    const { call } = await start();
    await call('POST', `zones/${ZONE}/instances`, instanceBody('dstack-od', ZONE));
    expect(() => emulator?.preemptInstance('dstack-od')).toThrow(/not a spot instance/);
  });
});

describe('firewalls, types, images, regions', () => {
  it('firewall insert; a duplicate is 409 alreadyExists', async () => {
    const { call } = await start();
    const rule = {
      name: 'dstack-ssh-in-global-networks-default',
      network: 'global/networks/default',
      direction: 'INGRESS',
      allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
      sourceRanges: ['0.0.0.0/0'],
      targetTags: ['dstack-runner-instance'],
    };
    const created = await call('POST', 'global/firewalls', rule);
    expect((await call('GET', `global/operations/${created.body.name}`)).body).toMatchObject({
      status: 'DONE',
    });
    expect(created).toMatchObject({
      status: 200,
      body: { kind: 'compute#operation', status: 'DONE' },
    });
    expect(await call('POST', 'global/firewalls', rule)).toMatchObject({
      status: 409,
      body: {
        error: {
          errors: [{ reason: 'alreadyExists' }],
          message: `The resource 'projects/${emulator?.project}/global/firewalls/${rule.name}' already exists`,
        },
      },
    });
    expect((await call('GET', `global/firewalls/${rule.name}`)).body).toMatchObject({
      allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
    });
  });

  it('machine types (per zone, aggregated, paged), accelerator types, images, regions with GPU quotas', async () => {
    const { call } = await start({ quotas: { NVIDIA_T4_GPUS: 0 } });
    const types = await call('GET', `zones/${ZONE}/machineTypes`);
    const a2 = types.body.items.find((each: { name: string }) => each.name === 'a2-highgpu-1g');
    expect(a2).toMatchObject({
      guestCpus: 12,
      memoryMb: 87040,
      zone: ZONE,
      accelerators: [{ guestAcceleratorType: 'nvidia-tesla-a100', guestAcceleratorCount: 1 }],
    });
    const paged = await call('GET', `zones/${ZONE}/machineTypes?maxResults=5`);
    expect(paged.body.items).toHaveLength(5);
    const second = await call(
      'GET',
      `zones/${ZONE}/machineTypes?maxResults=5&pageToken=${paged.body.nextPageToken}`,
    );
    expect(second.body.items[0].name).toBe(types.body.items[5].name);
    const aggregated = await call('GET', 'aggregated/machineTypes');
    expect(Object.keys(aggregated.body.items)).toContain('zones/europe-west4-a');
    const accelerators = await call('GET', `zones/${ZONE}/acceleratorTypes`);
    expect(
      accelerators.body.items.find((each: { name: string }) => each.name === 'nvidia-tesla-t4'),
    ).toMatchObject({ maximumCardsPerInstance: 4 });
    expect(
      (await call('GET', '/compute/v1/projects/dstack/global/images/dstack-cuda-0.19.40')).body,
    ).toMatchObject({ name: 'dstack-cuda-0.19.40', status: 'READY' });
    expect(
      (await call('GET', '/compute/v1/projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts')).body
        .name,
    ).toBe('ubuntu-2204-jammy-v20250516');
    const region = await call('GET', 'regions/us-central1');
    expect(region.body.quotas).toContainEqual({ metric: 'NVIDIA_T4_GPUS', limit: 0, usage: 0 });
    expect(region.body.zones).toContain(
      `https://www.googleapis.com/compute/v1/projects/${emulator?.project}/zones/${ZONE}`,
    );
    expect((await call('GET', '/compute/v1/projects/someone-else/zones')).status).toBe(403);
  });
});
