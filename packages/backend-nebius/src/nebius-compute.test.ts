import { Catalog } from '@dstack/catalog';
import {
  BackendAuthenticationError,
  buildVmUserData,
  generateEd25519KeyPair,
  generateUniqueBackendName,
  type InstanceConfiguration,
  InvalidCredentialsError,
  NoCapacityError,
  NotYetTerminatedError,
  type PlacementGroup,
  ProvisioningError,
  RequirementsSchema,
} from '@dstack/core';
import type { NebiusEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NebiusApi } from './nebius-api.js';
import { createNebiusBackend, NEBIUS_SETUP_COMMANDS, type NebiusCompute } from './nebius-compute.js';
import { type NebiusBackendConfigWithCreds, nebiusConfigModels } from './nebius-config.js';
import { emulatorConfig, startNebiusTestEmulator } from './nebius-emulator.test.helpers.js';

const keys = generateEd25519KeyPair('project');
const requirements = (gpu: string, spot: boolean | null) =>
  RequirementsSchema.parse({
    resources: {
      cpu: { count: { min: 1 } },
      memory: { min: null },
      gpu: { name: [gpu], count: { min: 1, max: 1 } },
    },
    spot,
  });

let emulator: NebiusEmulator;

function computeWith(extra: Partial<NebiusBackendConfigWithCreds> = {}): NebiusCompute {
  return createNebiusBackend({
    config: nebiusConfigModels.config.parse(emulatorConfig(emulator, extra)),
    catalog: new Catalog(),
    offersCacheMs: 0,
    pollIntervalMs: 20,
  });
}

function instanceConfig(instanceId: string): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: 'job-0',
    instance_id: instanceId,
    agent_token: 'agent-token-1',
    user: 'Admin',
    ssh_keys: [{ public: keys.publicKey, private: keys.privateKey }],
    volumes: [],
  };
}

/** Terminates until the instance and its boot disk are gone (NotYetTerminatedError meanwhile). */
async function terminate(
  compute: NebiusCompute,
  data: { instance_id: string; region: string; backend_data?: string | null },
) {
  await expect
    .poll(
      () =>
        compute.terminateInstance(data.instance_id, data.region, data.backend_data).then(
          () => 'done',
          (error: unknown) => (NotYetTerminatedError.isInstance(error) ? 'waiting' : Promise.reject(error)),
        ),
      { interval: 20 },
    )
    .toBe('done');
}

beforeAll(async () => {
  emulator = await startNebiusTestEmulator();
});
afterAll(() => emulator?.close());

describe('NebiusCompute on the Nebius emulator', () => {
  it("offers the catalog's rows in the regions the tenancy has projects in, availability unknown", async () => {
    const offers = await computeWith({ regions: ['eu-north1', 'eu-west1'] }).getOffers(
      requirements('H100', null),
    );
    expect(new Set(offers.map((offer) => offer.region))).toEqual(new Set(['eu-north1', 'eu-west1']));
    expect(
      offers.map((offer) => [offer.instance.name, offer.instance.resources.spot, offer.price]),
    ).toContainEqual(['gpu-h100-sxm 1gpu-16vcpu-200gb', true, 1.25]);
    expect(offers.every((offer) => offer.availability === 'unknown')).toBe(true);
    expect(offers[0]?.instance.resources.disk.size_mib).toBeGreaterThanOrEqual(40 * 1024);
  });

  it("builds dstack's region → project map, naming the settings it refuses", async () => {
    // eu-north1 has two projects: the default one is `default-…`.
    const offers = await computeWith({ projects: ['project-e00north1research'] }).getOffers(
      requirements('H100', false),
    );
    expect(new Set(offers.map((offer) => offer.region))).toEqual(new Set(['eu-north1']));
    const refused = async (extra: Partial<NebiusBackendConfigWithCreds>) =>
      computeWith(extra)
        .getOffers(requirements('H100', false))
        .then(
          () => null,
          (error: unknown) => (InvalidCredentialsError.isInstance(error) ? error.fields : error),
        );
    expect(await refused({ regions: ['mars-1'] })).toEqual([['regions']]);
    expect(await refused({ projects: ['project-unknown'] })).toEqual([['projects']]);
    expect(await refused({ projects: ['project-e00north1default', 'project-e00north1research'] })).toEqual([
      ['projects'],
    ]);
  });

  it('launches a boot disk and an instance (user data, labels, preemptible for spot), once per instance_id, and deletes both', async () => {
    const compute = computeWith({ tags: { team: 'ml', Bad: 'x' } });
    const offer = (await compute.getOffers(requirements('H100', true))).find(
      (each) => each.region === 'eu-north1',
    );
    if (!offer) throw new Error('no offer');
    const first = await compute.createInstance(offer, instanceConfig('launch-1'));
    const again = await compute.createInstance(offer, instanceConfig('launch-1'));
    expect(again.instance_id).toBe(first.instance_id);
    expect(first).toMatchObject({ username: 'ubuntu', hostname: null, region: 'eu-north1' });
    const [instance] = emulator.state().instances;
    expect(instance).toMatchObject({
      platform: 'gpu-h100-sxm',
      preset: '1gpu-16vcpu-200gb',
      preemptible: true,
    });
    expect(emulator.state().disks).toEqual([
      { id: instance?.bootDiskId, name: instance?.name, attachedTo: first.instance_id },
    ]);
    // dstack's setup commands (sshd forwarding, Docker's daemon.json) run before the shim's bootstrap.
    const api = new NebiusApi({
      serviceAccountId: emulator.serviceAccount.serviceAccountId,
      publicKeyId: emulator.serviceAccount.publicKeyId,
      privateKey: emulator.serviceAccount.privateKey,
      endpointUrl: emulator.apiUrl,
    });
    const userData = String((await api.getInstance(first.instance_id)).spec.cloud_init_user_data);
    api.close();
    expect(userData).toBe(
      buildVmUserData(instanceConfig('launch-1'), { backendCommands: NEBIUS_SETUP_COMMANDS }),
    );
    expect(userData).toContain(
      `echo '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}, "exec-opts": ["native.cgroupdriver=cgroupfs"]}' > /etc/docker/daemon.json`,
    );

    await expect
      .poll(async () => (await compute.updateProvisioningData(first)).hostname)
      .toMatch(/^127\.79\./);
    await terminate(compute, first);
    expect(emulator.state()).toMatchObject({ instances: [], disks: [] });
    await compute.terminateInstance(first.instance_id, first.region, first.backend_data);
    await expect(compute.updateProvisioningData(first)).rejects.toSatisfy((error) =>
      ProvisioningError.isInstance(error),
    );
  });

  it('sees a preempted spot instance as interrupted (Nebius stops it, keeping it and its static address), a regular one running', async () => {
    const compute = computeWith();
    const offers = await compute.getOffers(requirements('H100', null));
    const spotOffer = offers.find((each) => each.region === 'eu-north1' && each.instance.resources.spot);
    const regularOffer = offers.find((each) => each.region === 'eu-north1' && !each.instance.resources.spot);
    if (!spotOffer || !regularOffer) throw new Error('no eu-north1 offers');
    const spot = await compute.createInstance(spotOffer, instanceConfig('preempted-1'));
    const regular = await compute.createInstance(regularOffer, instanceConfig('regular-1'));
    await expect
      .poll(async () => (await compute.updateProvisioningData(spot)).hostname)
      .toMatch(/^127\.79\./);
    const address = (await compute.updateProvisioningData(spot)).hostname;
    expect(await compute.instanceStatus(spot)).toBe('running');
    expect(() => emulator.preemptInstance(regular.instance_id)).toThrow(/not a preemptible instance/);

    // The control server's route, as `pnpm emulator nebius` users preempt.
    const preempt = (id: string) =>
      fetch(`${emulator.url}/_emulator/instances/${id}/preempt`, { method: 'POST' });
    const refused = await preempt(regular.instance_id);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: `${regular.instance_id} is not a preemptible instance` });
    const preempted = await preempt(spot.instance_id);
    expect(await preempted.json()).toEqual({ id: spot.instance_id, state: 'STOPPING' });
    expect(await compute.instanceStatus(spot)).toBe('interrupted');
    expect(await compute.instanceStatus(regular)).toBe('running');
    await expect
      .poll(() => emulator.state().instances.find((each) => each.id === spot.instance_id)?.state)
      .toBe('STOPPED');
    expect(() => emulator.preemptInstance(spot.instance_id)).toThrow(/is STOPPED/);
    // Stopped, not deleted: Get answers it, its boot disk attached and its static address kept.
    const api = new NebiusApi({
      serviceAccountId: emulator.serviceAccount.serviceAccountId,
      publicKeyId: emulator.serviceAccount.publicKeyId,
      privateKey: emulator.serviceAccount.privateKey,
      endpointUrl: emulator.apiUrl,
    });
    const stopped = await api.getInstance(spot.instance_id);
    api.close();
    expect(stopped.status?.state).toBe('STOPPED');
    expect(stopped.status?.network_interfaces[0]?.public_ip_address?.address).toBe(`${address}/32`);
    expect(emulator.state().disks.find((disk) => disk.attachedTo === spot.instance_id)).toBeDefined();
    expect(await compute.instanceStatus(spot)).toBe('interrupted');
    await expect(compute.updateProvisioningData(spot)).rejects.toSatisfy((error) =>
      ProvisioningError.isInstance(error),
    );

    await terminate(compute, spot);
    expect(await compute.instanceStatus(spot)).toBe('gone');
    await terminate(compute, regular);
    expect(emulator.state()).toMatchObject({ instances: [], disks: [] });
  });

  it('reuses the boot disk a launch that died before its instance made', async () => {
    const compute = computeWith();
    const name = generateUniqueBackendName('main', 'job-0', { maxLength: 63, seed: 'retried' });
    const api = new NebiusApi({
      serviceAccountId: emulator.serviceAccount.serviceAccountId,
      publicKeyId: emulator.serviceAccount.publicKeyId,
      privateKey: emulator.serviceAccount.privateKey,
      endpointUrl: emulator.apiUrl,
    });
    const projectId = 'project-e00north1default';
    const regionOffer = (await compute.getOffers(requirements('L40S', false))).find(
      (each) => each.region === 'eu-north1',
    );
    if (!regionOffer) throw new Error('no eu-north1 offer');
    const made = await api.createDisk({
      metadata: { name, parent_id: projectId },
      spec: {
        size_mebibytes: 100 * 1024,
        type: 'NETWORK_SSD',
        source_image_family: { image_family: 'ubuntu24.04-cuda13.0' },
      },
    });
    api.close();

    const launched = await compute.createInstance(regionOffer, instanceConfig('retried'));

    expect(emulator.state().disks.map((disk) => disk.id)).toEqual([made.resource_id]);
    expect(JSON.parse(launched.backend_data ?? '')).toEqual({ boot_disk_id: made.resource_id });
    await terminate(compute, launched);
    expect(emulator.state()).toMatchObject({ instances: [], disks: [] });
  });

  it('makes a cluster placement group a GPU cluster on a fabric of the master offer, puts instances in it, and deletes it', async () => {
    const compute = computeWith({ fabrics: ['fabric-3'] });
    const offers = await compute.getOffers(
      RequirementsSchema.parse({
        resources: {
          cpu: { count: { min: 1 } },
          memory: { min: null },
          gpu: { name: ['H100'], count: { min: 8, max: 8 } },
        },
        spot: false,
      }),
    );
    const master = offers.find((offer) => offer.region === 'eu-north1');
    const elsewhere = offers.find((offer) => offer.region === 'eu-west1');
    if (!master || !elsewhere) throw new Error('no offers');
    const group: PlacementGroup = {
      name: 'main-cluster-pg',
      project_name: 'main',
      configuration: { backend: 'nebius', region: 'eu-north1', placement_strategy: 'cluster' },
    };
    const provisioned = { ...group, provisioning_data: await compute.createPlacementGroup(group, master) };
    const [cluster] = emulator.state().gpuClusters;
    // `fabrics` narrows the master offer's fabrics (fabric-2, -3, -4, -6) to the one allowed.
    expect(cluster).toMatchObject({ name: 'main-cluster-pg', fabric: 'fabric-3' });
    expect(JSON.parse(provisioned.provisioning_data.backend_data ?? '')).toEqual({
      cluster: { id: cluster?.id, fabric: 'fabric-3' },
    });
    expect(compute.isSuitablePlacementGroup(provisioned, master)).toBe(true);
    expect(compute.isSuitablePlacementGroup(provisioned, elsewhere)).toBe(false);

    const launched = await compute.createInstance(master, instanceConfig('cluster-node-0'), provisioned);
    expect(emulator.state().gpuClusters[0]?.instances).toEqual([launched.instance_id]);
    await terminate(compute, launched);
    await compute.deletePlacementGroup(provisioned);
    await compute.deletePlacementGroup(provisioned);
    expect(emulator.state().gpuClusters).toEqual([]);

    // An offer without fabrics (a 1-GPU preset) gets a group with no cluster, suitable for it.
    const single = (await compute.getOffers(requirements('H100', false)))[0];
    if (!single) throw new Error('no offer');
    const plain = await compute.createPlacementGroup(group, single);
    expect(JSON.parse(plain.backend_data ?? '')).toEqual({ cluster: null });
    expect(compute.isSuitablePlacementGroup({ ...group, provisioning_data: plain }, master)).toBe(true);
    expect(emulator.state().gpuClusters).toEqual([]);
  });

  it("maps Nebius's refusals: quota and a failed create Operation to NoCapacityError (deleting the disk), a refused key to authentication", async () => {
    const compute = computeWith();
    const [offer] = await compute.getOffers(requirements('L40S', false));
    if (!offer) throw new Error('no offer');
    emulator.addFault({ code: 'QUOTA_EXCEEDED', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('quota'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    emulator.addFault({ code: 'NO_CAPACITY', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('capacity'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    expect(emulator.state()).toMatchObject({ instances: [], disks: [] });
    emulator.addFault({ code: 'INVALID_CREDENTIALS', count: 1 });
    await expect(computeWith().getOffers(requirements('L40S', false))).rejects.toSatisfy((error) =>
      BackendAuthenticationError.isInstance(error),
    );
  });
});
