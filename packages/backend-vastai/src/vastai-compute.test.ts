/**
 * What the Compute asks of Vast.ai, checked on the emulator's record of each rental (no
 * containers: the entrypoint's boot is container-entrypoint-boot.test.ts's), and how it reads
 * Vast.ai's refusals and failures.
 */
import { randomUUID } from 'node:crypto';
import {
  classifyBackendFailure,
  type InstanceOfferWithAvailability,
  NoCapacityError,
  ProvisioningError,
  RequirementsSchema,
  type RunJobParams,
  runnerRuntimeTarballUrl,
} from '@dstack/core';
import type { VastaiEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVastAiBackend, type VastAiCompute } from './vastai-compute.js';
import { emulatorConfig, startVastAiTestEmulator } from './vastai-emulator.test.helpers.js';

const requirements = RequirementsSchema.parse({
  resources: { cpu: { count: { min: 1 } }, memory: { min: null }, gpu: { count: { min: 1 } } },
});
const IMAGE = 'dstack-test/runner-busybox:v2';

let emulator: VastaiEmulator;
let compute: VastAiCompute;

beforeAll(async () => {
  emulator = await startVastAiTestEmulator();
  // Each test rents the first ask of a fresh search: no offers kept between them.
  compute = createVastAiBackend({ config: emulatorConfig(emulator), offersCacheMs: 0 });
});

afterAll(async () => {
  await emulator?.close();
});

function runJobParams(offer: InstanceOfferWithAvailability, extra: Partial<RunJobParams> = {}): RunJobParams {
  return {
    instanceId: randomUUID(),
    agentToken: 'agent-token-0123456789',
    runnerDownloadUrl: 'http://10.0.0.1:8080/dstack-runtime.tar.gz',
    run: { project_name: 'main', user: 'admin', run_spec: { run_name: 'vast', configuration: {} } },
    job: {
      job_spec: {
        job_name: 'vast-0-0',
        job_num: 0,
        image_name: IMAGE,
        requirements,
        // A secret reference (dstack's `${{ secrets.NAME }}`), left for the runner's submit.
        env: { GREETING: 'hi', TOKEN: ['$', '{{ secrets.TOKEN }}'].join('') },
      },
    },
    offer,
    projectSshPublicKey:
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO2n4bX3Jt1Q0oYJm6Gx5mC1kGQJ3Yx0eQm1xq6vW3nS project',
    projectSshPrivateKey: 'unused',
    volumes: [],
    placementGroup: null,
    requirements,
    ...extra,
  };
}

async function offer(spot: boolean): Promise<InstanceOfferWithAvailability> {
  const offers = await compute.getOffers({ ...requirements, spot });
  const first = offers[0];
  if (!first) throw new Error('the emulator has no offer');
  return first;
}

describe('VastAiCompute', () => {
  it("keeps a search's offers for the same requirements, as dstack does for 180 s", async () => {
    const cached = createVastAiBackend({ config: emulatorConfig(emulator) });
    const first = await cached.getOffers(requirements);
    // The marketplace is now too slow to answer: the kept offers answer instead.
    const fault = emulator.addFault({ code: 'SLOW_RESPONSE', route: 'search', delayMs: 5_000 });
    try {
      expect(await cached.getOffers(requirements)).toEqual(first);
      await expect(
        cached.getOffers({ ...requirements, spot: true }, { signal: AbortSignal.timeout(200) }),
      ).rejects.toThrow();
    } finally {
      emulator.removeFault(fault.id);
    }
  });

  it('rents the ask with the image, the plain job env, the token in the env and the entrypoint as args', async () => {
    const onDemand = await offer(false);

    const data = await compute.runJob(runJobParams(onDemand));
    const rental = emulator.instance(Number(data.instance_id));

    expect(data).toMatchObject({ backend: 'vastai', dockerized: false, username: 'root', hostname: null });
    expect(rental?.request).toMatchObject({
      image: IMAGE,
      bid: null,
      diskGb: 100,
      onstart: '/bin/sh',
      runtype: 'args',
      environment: { GREETING: 'hi', DSTACK_RUNNER_TOKEN: 'agent-token-0123456789' },
      ports: [expect.objectContaining({ containerPort: 10022 })],
    });
    expect(rental?.request.environment).not.toHaveProperty('TOKEN');
    expect(rental?.request.args?.join(' ')).toContain('http://10.0.0.1:8080/dstack-runtime.tar.gz');
    expect(rental?.request.args?.join(' ')).not.toContain('agent-token-0123456789');
    await compute.terminateInstance(data.instance_id, data.region);
  });

  it('bids the minimum on a spot ask, and turns a refused bid into NoCapacityError leaving no contract', async () => {
    const spot = await offer(true);
    const data = await compute.runJob(runJobParams(spot));
    expect(emulator.instance(Number(data.instance_id))?.request.bid).toBe(
      (spot.backend_data as { min_bid: number }).min_bid,
    );
    await compute.terminateInstance(data.instance_id, data.region);

    const stale = { ...spot, backend_data: { ...spot.backend_data, min_bid: 0.001 } };
    const before = emulator.state().instances.length;
    await expect(compute.runJob(runJobParams(stale))).rejects.toSatisfy((error: unknown) =>
      NoCapacityError.isInstance(error),
    );
    expect(emulator.state().instances.length).toBe(before);
  });

  it('gives a refused key and throttling of a rental as what they are, not as no capacity', async () => {
    const onDemand = await offer(false);
    const refused = createVastAiBackend({
      config: { ...emulatorConfig(emulator), creds: { type: 'api_key', api_key: 'wrong' } },
    });
    const denied = await refused.runJob(runJobParams(onDemand)).catch((error: unknown) => error);
    expect(classifyBackendFailure(denied)).toBe('authentication');

    const fault = emulator.addFault({ code: 'RATE_LIMITED', route: 'rent' });
    try {
      const throttled = await compute.runJob(runJobParams(onDemand)).catch((error: unknown) => error);
      expect(classifyBackendFailure(throttled)).toBe('rate-limit');
    } finally {
      emulator.removeFault(fault.id);
    }
  });

  it('fails provisioning of a container the runtime could not create', async () => {
    const fault = emulator.addFault({ code: 'OCI_RUNTIME_CREATE_FAILED', image: IMAGE, count: 1 });
    try {
      const data = await compute.runJob(runJobParams(await offer(false)));
      let failure: unknown;
      for (let attempt = 0; attempt < 100 && failure === undefined; attempt++) {
        await compute.updateProvisioningData(data).catch((error: unknown) => {
          failure = error;
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(ProvisioningError.isInstance(failure)).toBe(true);
      await compute.terminateInstance(data.instance_id, data.region);
    } finally {
      emulator.removeFault(fault.id);
    }
  });

  it('fails provisioning of a rental whose image cannot be pulled at once, with the pull error', async () => {
    const missing = 'example/no-such-image:1';
    const fault = emulator.addFault({ code: 'IMAGE_PULL_FAILED', image: missing, count: 1 });
    try {
      const params = runJobParams(await offer(false));
      const data = await compute.runJob({
        ...params,
        job: { ...params.job, job_spec: { ...params.job.job_spec, image_name: missing } },
      });
      await emulator.settle();
      // Past the emulator's null status: the rental shows `loading` with Docker's pull error.
      let failure: unknown;
      for (let attempt = 0; attempt < 100 && failure === undefined; attempt++) {
        await compute.updateProvisioningData(data).catch((error: unknown) => {
          failure = error;
        });
        if (failure === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(
        emulator.state().instances.find((each) => each.id === Number(data.instance_id))?.actualStatus,
      ).toBe('loading');
      expect(ProvisioningError.isInstance(failure)).toBe(true);
      expect((failure as Error).message).toBe(
        "the image could not be pulled: Error response from daemon: pull access denied for example/no-such-image, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
      );
      await compute.terminateInstance(data.instance_id, data.region);
    } finally {
      emulator.removeFault(fault.id);
    }
  });

  it('keeps polling a rental whose image is still being pulled', async () => {
    const data = await compute.runJob(runJobParams(await offer(false)));
    await emulator.settle();
    let seenLoading = false;
    for (let attempt = 0; attempt < 100; attempt++) {
      const instance = emulator.state().instances.find((each) => each.id === Number(data.instance_id));
      if (instance?.actualStatus === 'running') break;
      seenLoading ||= instance?.actualStatus === 'loading';
      await compute.updateProvisioningData(data);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(seenLoading).toBe(true);
    await compute.terminateInstance(data.instance_id, data.region);
  });

  it('reports an outbid rental interrupted', async () => {
    const data = await compute.runJob(runJobParams(await offer(true)));
    expect(await compute.instanceStatus(data)).toBe('running');

    emulator.outbid(Number(data.instance_id));

    expect(await compute.instanceStatus(data)).toBe('interrupted');
    await compute.terminateInstance(data.instance_id, data.region);
    expect(await compute.instanceStatus(data)).toBe('gone');
  });

  it('starts the runner from the published runtime package when the server names no download URL', async () => {
    const data = await compute.runJob(runJobParams(await offer(false), { runnerDownloadUrl: null }));
    expect(emulator.instance(Number(data.instance_id))?.request.args?.join(' ')).toContain(
      runnerRuntimeTarballUrl(),
    );
    await compute.terminateInstance(data.instance_id, data.region);
  });
});
