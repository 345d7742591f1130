/**
 * Placement groups (compact placement resource policies) and volumes (persistent disks) of the gcp
 * backend, through its real REST client against the GCP emulator.
 */
import { randomUUID } from 'node:crypto';
import {
  BackendError,
  generateUniquePlacementGroupName,
  type InstanceConfiguration,
  type JobProvisioningData,
  type PlacementGroup,
  RequirementsSchema,
  type Volume,
} from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGcpBackend, type GcpCompute } from './gcp-compute.js';
import { gcpConfigModels } from './gcp-config.js';
import {
  emulatorConfig,
  FAST_OPERATIONS,
  type GcpTestEmulator,
  startGcpTestEmulator,
} from './gcp-emulator.test.helpers.js';

let emulator: GcpTestEmulator;
let compute: GcpCompute;

beforeAll(async () => {
  emulator = await startGcpTestEmulator();
  compute = createGcpBackend({
    config: gcpConfigModels.config.parse(emulatorConfig(emulator.gcp, { regions: ['us-central1'] })),
    ...FAST_OPERATIONS,
  });
});
afterAll(async () => {
  await emulator?.close();
});

function instanceConfig(name: string): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: name,
    instance_id: randomUUID(),
    agent_token: 'agent-token',
    user: 'admin',
    ssh_keys: [{ public: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3x project' }],
  };
}

async function cpuOffer() {
  const requirements = RequirementsSchema.parse({
    resources: { cpu: { count: { min: 2 } }, memory: { min: null }, gpu: { count: { min: 0, max: 0 } } },
  });
  const offer = (await compute.getOffers(requirements)).find((each) => each.availability === 'available');
  if (!offer) throw new Error('no available offer');
  return offer;
}

function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function untilGone(data: JobProvisioningData): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const gone = !emulator.gcp.state().instances.some((each) => each.id === data.instance_id);
    if (gone) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${data.instance_id} is still there`);
}

describe('placement groups', () => {
  it("makes a compact placement policy named as dstack names it, launches the fleet's instances into it, and deletes it once they are gone", async () => {
    const offer = await cpuOffer();
    const group: PlacementGroup = {
      name: generateUniquePlacementGroupName('main', 'cluster'),
      project_name: 'main',
      configuration: { backend: 'gcp', region: offer.region, placement_strategy: 'cluster' },
    };
    expect(group.name).toMatch(/^dstack-main-cluster-pg-[a-z0-9]{8}$/);
    expect(await compute.createPlacementGroup(group, offer)).toEqual({ backend: 'gcp', backend_data: null });
    // A repeated create (the server died before recording it) finds the same policy.
    await compute.createPlacementGroup(group, offer);
    const policy = await compute.api.get<Record<string, unknown>>(
      `regions/${offer.region}/resourcePolicies/${group.name}`,
    );
    expect(policy).toMatchObject({
      groupPlacementPolicy: { collocation: 'COLLOCATED', availabilityDomainCount: 1 },
    });
    expect(compute.isSuitablePlacementGroup(group, offer)).toBe(true);
    expect(compute.isSuitablePlacementGroup(group, { ...offer, region: 'europe-west4' })).toBe(false);
    expect(compute.arePlacementGroupsCompatibleWithReservations()).toBe(false);

    const master = await compute.createInstance(offer, instanceConfig('cluster-0'), group);
    const worker = await compute.createInstance(
      { ...offer, availability_zones: [master.availability_zone as string] },
      instanceConfig('cluster-1'),
      group,
    );
    const resource = await compute.api.get<{ resourcePolicies: string[] }>(
      `zones/${master.availability_zone}/instances/${master.instance_id}`,
    );
    expect(resource.resourcePolicies).toEqual([
      expect.stringMatching(
        new RegExp(
          `/projects/${emulator.gcp.project}/regions/${offer.region}/resourcePolicies/${group.name}$`,
        ),
      ),
    ]);
    expect(emulator.gcp.state().resourcePolicies).toEqual([
      {
        name: group.name,
        region: offer.region,
        collocation: 'COLLOCATED',
        instances: [master.instance_id, worker.instance_id],
      },
    ]);

    const inUse = await caught(compute.deletePlacementGroup(group));
    expect(BackendError.isInstance(inUse)).toBe(true);
    expect((inUse as Error).message).toContain('is in use');
    for (const each of [master, worker]) {
      await compute.terminateInstance(each.instance_id, each.region, each.backend_data);
      await untilGone(each);
    }
    await compute.deletePlacementGroup(group);
    expect(emulator.gcp.state().resourcePolicies).toEqual([]);
    // Deleting a group that is gone succeeds.
    await compute.deletePlacementGroup(group);
  });
});

describe('volumes', () => {
  function volume(extra: Partial<Volume['configuration']> = {}, id = randomUUID()): Volume {
    return {
      id,
      name: 'data',
      user: 'admin',
      project_name: 'main',
      configuration: { type: 'volume', backend: 'gcp', region: 'us-central1', size: 100, ...extra },
      external: false,
      created_at: new Date().toISOString(),
      status: 'submitted',
      deleted: false,
      cost: 0,
    };
  }

  it('creates a pd-balanced disk (again: the same one), attaches it as /dev/disk/by-id/google-pd-<disk>, detaches and deletes it', async () => {
    const created = volume({ availability_zone: 'us-central1-b', tags: { team: 'ml' } });
    const data = await compute.createVolume(created);
    expect(data).toMatchObject({
      backend: 'gcp',
      volume_id: expect.stringMatching(/^dstack-main-data-[a-z0-9]{8}$/),
      size_gb: 100,
      availability_zone: 'us-central1-b',
      price: 12,
      attachable: true,
      detachable: true,
    });
    expect(JSON.parse(data.backend_data ?? '')).toEqual({ type: 'disk', disk_type: 'pd-balanced' });
    expect((await compute.createVolume(created)).volume_id).toBe(data.volume_id);
    const disk = await compute.api.get<Record<string, unknown>>(
      `zones/us-central1-b/disks/${data.volume_id}`,
    );
    expect(disk).toMatchObject({
      sizeGb: '100',
      labels: { owner: 'dstack', dstack_name: 'data', dstack_user: 'admin', team: 'ml' },
    });
    expect(emulator.gcp.state().disks.filter((each) => each.name === data.volume_id)).toHaveLength(1);

    const registered = await compute.registerVolume(volume({ volume_id: data.volume_id, size: undefined }));
    expect(registered).toMatchObject({
      volume_id: data.volume_id,
      availability_zone: 'us-central1-b',
      size_gb: 100,
    });
    const missing = await caught(
      compute.registerVolume(volume({ volume_id: 'no-such-disk', size: undefined })),
    );
    expect((missing as Error).message).toContain('Persistent disk no-such-disk not found');

    const offer = await cpuOffer();
    const instance = await compute.createInstance(
      { ...offer, availability_zones: ['us-central1-b'] },
      instanceConfig('volume-user'),
      null,
    );
    const active: Volume = {
      ...created,
      status: 'active',
      volume_id: data.volume_id,
      provisioning_data: data,
    };
    const attachment = await compute.attachVolume(active, instance);
    expect(attachment).toEqual({ device_name: `/dev/disk/by-id/google-pd-${data.volume_id}` });
    // A repeated attach (the server did not record the first) is the same attachment.
    expect(await compute.attachVolume(active, instance)).toEqual(attachment);
    expect(emulator.gcp.state().disks.find((each) => each.name === data.volume_id)?.attachedTo).toEqual({
      instance: instance.instance_id,
      deviceName: `pd-${data.volume_id}`,
    });
    expect(await compute.isVolumeDetached(active, instance)).toBe(false);
    const refused = await caught(compute.deleteVolume(active));
    expect((refused as Error).message).toMatch(/already being used by/);

    await compute.detachVolume(active, instance);
    expect(await compute.isVolumeDetached(active, instance)).toBe(true);
    await compute.detachVolume(active, instance);
    await compute.deleteVolume(active);
    // The delete's zone operation ends on the emulator's timeline: gone once it has.
    await vi.waitFor(
      () => expect(emulator.gcp.state().disks.filter((each) => each.name === data.volume_id)).toEqual([]),
      { timeout: 30_000, interval: 20 },
    );
    await compute.deleteVolume(active);
    await compute.terminateInstance(instance.instance_id, instance.region, instance.backend_data);
    await untilGone(instance);
  });

  it('refuses instance types that cannot take persistent disks, as dstack', async () => {
    const data = await compute.createVolume(volume());
    const active: Volume = {
      ...volume(),
      status: 'active',
      volume_id: data.volume_id,
      provisioning_data: data,
    };
    const offer = await cpuOffer();
    const fake = {
      backend: 'gcp',
      instance_type: { ...offer.instance, name: 'c4-standard-8' },
      instance_id: 'whatever',
      region: 'us-central1',
      availability_zone: data.availability_zone,
    } as unknown as JobProvisioningData;
    const refused = await caught(compute.attachVolume(active, fake));
    expect((refused as Error).message).toBe(
      'Instance type c4-standard-8 does not support Persistent disk volumes',
    );
    await compute.deleteVolume(active);
  });
});
