/**
 * What the Compute asks of RunPod, checked on the emulator's record of each pod (no containers:
 * the runner in a pod's container is the server's runpod-emulator.test.ts), and how it reads
 * RunPod's refusals.
 */
import { randomUUID } from 'node:crypto';
import {
  BackendAuthenticationError,
  type InstanceOfferWithAvailability,
  NoCapacityError,
  RequirementsSchema,
  type RunJobParams,
} from '@dstack/core';
import type { RunpodEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunpodBackend, type RunpodCompute } from './runpod-compute.js';
import { emulatorConfig, startRunpodTestEmulator } from './runpod-emulator.test.helpers.js';

const gpuRequirements = RequirementsSchema.parse({
  resources: { cpu: { count: { min: 1 } }, memory: { min: null }, gpu: { count: { min: 1 } } },
});
const IMAGE = 'dstack-test/runner-busybox:v2';

let emulator: RunpodEmulator;
let compute: RunpodCompute;

beforeAll(async () => {
  emulator = await startRunpodTestEmulator();
  compute = createRunpodBackend({ config: emulatorConfig(emulator) });
});

afterAll(async () => {
  await emulator?.close();
});

function runJobParams(
  offer: InstanceOfferWithAvailability,
  extra: Partial<RunJobParams['job']['job_spec']> = {},
): RunJobParams {
  return {
    instanceId: randomUUID(),
    agentToken: 'agent-token-0123456789',
    runnerDownloadUrl: 'http://10.0.0.1:8080/dstack-runtime.tar.gz',
    run: { project_name: 'main', user: 'admin', run_spec: { run_name: 'pod', configuration: {} } },
    job: {
      job_spec: {
        job_name: 'pod-0-0',
        job_num: 0,
        image_name: IMAGE,
        requirements: gpuRequirements,
        ...extra,
      },
    },
    offer,
    projectSshPublicKey:
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO2n4bX3Jt1Q0oYJm6Gx5mC1kGQJ3Yx0eQm1xq6vW3nS project',
    projectSshPrivateKey: 'unused',
    volumes: [],
    placementGroup: null,
    requirements: gpuRequirements,
  } as RunJobParams;
}

async function cheapestGpuOffer(target: RunpodCompute = compute): Promise<InstanceOfferWithAvailability> {
  const first = (await target.getOffers(gpuRequirements))[0];
  if (!first) throw new Error('the emulator has no GPU offer');
  return first;
}

describe('RunpodCompute', () => {
  it('offers Secure Cloud only unless community_cloud, within the configured regions, never Instant Clusters', async () => {
    const secure = await compute.getOffers(gpuRequirements);
    const community = await createRunpodBackend({
      config: emulatorConfig(emulator, { community_cloud: true }),
    }).getOffers(gpuRequirements);
    const regional = await createRunpodBackend({
      config: emulatorConfig(emulator, { regions: ['EU-RO-1'] }),
    }).getOffers(gpuRequirements);

    expect(secure.length).toBeGreaterThan(0);
    expect(secure.every((offer) => offer.region.includes('-'))).toBe(true);
    expect(community.some((offer) => offer.region === 'US')).toBe(true);
    expect(community[0]?.price).toBeLessThan(secure[0]?.price ?? 0);
    expect(new Set(regional.map((offer) => offer.region))).toEqual(new Set(['EU-RO-1']));
    expect(
      secure.every((offer) => offer.instance_runtime === 'runner' && offer.availability === 'available'),
    ).toBe(true);
    expect(
      secure.some((offer) => (offer.backend_data as { pod_counts?: unknown }).pod_counts !== undefined),
    ).toBe(false);
  });

  it('deploys the offer as dstack does: its GPU type, data center, resources, the runner as the docker command, port 10022 and the token in env', async () => {
    const offer = await cheapestGpuOffer();
    const data = await compute.runJob(runJobParams(offer));
    const pod = emulator.state().pods.find((each) => each.id === data.instance_id);

    expect(pod).toMatchObject({
      imageName: IMAGE,
      gpuTypeId: offer.instance.name,
      gpuCount: offer.instance.resources.gpus.length,
      location: offer.region,
      desiredStatus: 'RUNNING',
    });
    expect(data).toMatchObject({ backend: 'runpod', username: 'root', dockerized: false, hostname: null });
    const ready = await compute.updateProvisioningData(data);
    expect(ready.hostname).toBe('127.0.0.1');
    expect(ready.ssh_port).toBeGreaterThan(0);
    expect(await compute.instanceStatus(ready)).toBe('running');
    await compute.terminateInstance(data.instance_id, data.region);
    expect(await compute.instanceStatus(ready)).toBe('gone');
  });

  it('saves a private image’s registry credentials and deploys the pod with them', async () => {
    const offer = await cheapestGpuOffer();
    const data = await compute.runJob(
      runJobParams(offer, {
        image_name: 'registry.example.com/team/private:1',
        registry_auth: { username: 'u', password: 'p' },
      }),
    );
    const pod = emulator.state().pods.find((each) => each.id === data.instance_id);

    expect(pod?.containerRegistryAuthId).not.toBeNull();
    expect(emulator.state().registryAuths).toHaveLength(1);
    await compute.terminateInstance(data.instance_id, data.region);
  });

  it('deploys a CPU offer as a CPU pod with the smallest disk the job accepts', async () => {
    const cpuRequirements = RequirementsSchema.parse({
      resources: {
        cpu: { count: { min: 4, max: 4 } },
        memory: { min: 8, max: 8 },
        disk: { size: { min: 30, max: null } },
      },
    });
    const offer = (await compute.getOffers(cpuRequirements)).find(
      (each) => each.instance.name === 'cpu3c-4-8',
    );
    if (!offer) throw new Error('no cpu3c-4-8 offer');
    expect(offer.instance.resources.disk.size_mib).toBe(30 * 1024);

    const data = await compute.runJob({ ...runJobParams(offer), requirements: cpuRequirements });

    expect(emulator.state().pods.find((each) => each.id === data.instance_id)).toMatchObject({
      gpuTypeId: 'cpu3c-4-8',
      gpuCount: 0,
      location: offer.region,
    });
    await compute.terminateInstance(data.instance_id, data.region);
  });

  it('reads "no longer any instances available" as NoCapacityError, and a refused key as BackendAuthenticationError', async () => {
    const offer = await cheapestGpuOffer();
    emulator.failNextLaunchWithNoCapacity();
    const noCapacity = await compute.runJob(runJobParams(offer)).catch((error: unknown) => error);
    const badKey = createRunpodBackend({
      config: emulatorConfig(emulator, { creds: { type: 'api_key', api_key: 'revoked' } }),
    });
    const refused = await badKey.runJob(runJobParams(offer)).catch((error: unknown) => error);

    expect(NoCapacityError.isInstance(noCapacity)).toBe(true);
    expect((noCapacity as Error).message).toContain('There are no longer any instances available');
    expect(BackendAuthenticationError.isInstance(refused)).toBe(true);
  });

  it('reports an interrupted spot pod as interrupted', async () => {
    const onDemand = await cheapestGpuOffer();
    const spot = {
      ...onDemand,
      price: 0.35,
      instance: { ...onDemand.instance, resources: { ...onDemand.instance.resources, spot: true } },
    };
    const data = await compute.runJob(runJobParams(spot));

    emulator.interrupt(data.instance_id);

    expect(await compute.instanceStatus(data)).toBe('interrupted');
    await compute.terminateInstance(data.instance_id, data.region);
  });
});
