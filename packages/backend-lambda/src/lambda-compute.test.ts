import { Catalog, snapshotSource } from '@dstack/catalog';
import {
  BackendAuthenticationError,
  BackendRateLimitError,
  generateEd25519KeyPair,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  NoCapacityError,
  ProvisioningError,
  RequirementsSchema,
} from '@dstack/core';
import type { LambdaEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLambdaBootstrap, sealLambdaBootstrap } from './lambda-bootstrap-secret.js';
import { createLambdaBackend, type LambdaCompute, lambdaSshKeyName } from './lambda-compute.js';
import { lambdaConfigModels } from './lambda-config.js';
import { emulatorConfig, startLambdaTestEmulator } from './lambda-emulator.test.helpers.js';

const keys = generateEd25519KeyPair('project');
const a10 = RequirementsSchema.parse({
  resources: {
    cpu: { count: { min: 1 } },
    memory: { min: null },
    gpu: { name: ['A10'], count: { min: 1, max: 1 } },
  },
  spot: null,
});

let emulator: LambdaEmulator;
let compute: LambdaCompute;

function computeWith(apiKey?: string): LambdaCompute {
  const config = emulatorConfig(emulator, apiKey ? { creds: { type: 'api_key', api_key: apiKey } } : {});
  return createLambdaBackend({
    config: lambdaConfigModels.config.parse(config),
    catalog: new Catalog(),
    offersCacheMs: 0,
  });
}

function instanceConfig(instanceId: string): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: 'job-0',
    instance_id: instanceId,
    agent_token: 'agent-token-1',
    user: 'admin',
    ssh_keys: [{ public: keys.publicKey, private: keys.privateKey }],
    volumes: [],
  };
}

async function cheapestA10(): Promise<InstanceOfferWithAvailability> {
  const [offer] = await compute.getOffers(a10);
  if (!offer) throw new Error('no A10 offer');
  return offer;
}

beforeAll(async () => {
  emulator = await startLambdaTestEmulator();
  compute = computeWith();
});
afterAll(() => emulator?.close());

describe('LambdaCompute on the Lambda emulator', () => {
  it("offers the catalog's types in the configured regions, available where Lambda has capacity", async () => {
    emulator.setCapacity('gpu_1x_a10', ['us-east-1']);
    try {
      const offers = await compute.getOffers(a10);
      expect(offers.map((offer) => [offer.instance.name, offer.region, offer.availability])).toEqual([
        ['gpu_1x_a10', 'europe-central-1', 'not_available'],
        ['gpu_1x_a10', 'us-east-1', 'available'],
        ['gpu_1x_a10', 'us-west-1', 'not_available'],
      ]);
      expect(offers[0]?.price).toBe(0.75);
      const onlyWest = createLambdaBackend({
        config: lambdaConfigModels.config.parse(emulatorConfig(emulator, { regions: ['us-west-1'] })),
        catalog: new Catalog({
          source: snapshotSource(new URL('../../catalog/assets/snapshot/', import.meta.url).pathname),
        }),
      });
      expect((await onlyWest.getOffers(a10)).map((offer) => offer.region)).toEqual(['us-west-1']);
    } finally {
      emulator.setCapacity('gpu_1x_a10', null);
    }
  });

  it('launches once per instance_id, registering the project key once, and keeps the token out of the API', async () => {
    const offer = await cheapestA10();
    const first = await compute.createInstance(offer, instanceConfig('11111111-aaaa'));
    const again = await compute.createInstance(offer, instanceConfig('11111111-aaaa'));
    expect(again.instance_id).toBe(first.instance_id);
    const state = emulator.state();
    expect(state.instances.filter((each) => each.id === first.instance_id)).toHaveLength(1);
    expect(state.sshKeys.map((key) => key.name)).toEqual([lambdaSshKeyName(keys.publicKey)]);
    expect(state.instances[0]).toMatchObject({ instanceType: 'gpu_1x_a10', region: offer.region });
    expect(first).toMatchObject({ username: 'ubuntu', ssh_port: 22, hostname: null, dockerized: true });
    expect(first.backend_data).not.toContain('agent-token-1');
    const sealed = JSON.parse(first.backend_data ?? '{}').bootstrap as string;
    expect(openLambdaBootstrap(sealed, keys.privateKey).agent_token).toBe('agent-token-1');
    await compute.terminateInstance(first.instance_id);
  });

  it("maps Lambda's capacity, quota, key and throttling refusals to core's errors", async () => {
    const offer = await cheapestA10();
    emulator.addFault({ code: 'INSUFFICIENT_CAPACITY', instanceType: 'gpu_1x_a10', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('cap'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    emulator.addFault({ code: 'QUOTA_EXCEEDED', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('quota'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    emulator.addFault({ code: 'RATE_LIMITED', launchesOnly: true, count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('throttled'))).rejects.toSatisfy((error) =>
      BackendRateLimitError.isInstance(error),
    );
    await expect(computeWith('secret_wrong').getOffers(a10)).rejects.toSatisfy((error) =>
      BackendAuthenticationError.isInstance(error),
    );
    expect(emulator.state().instances.filter((each) => each.status !== 'terminating')).toEqual([]);
  });

  it('waits while the instance boots or cannot be logged in to, and fails once it is gone', async () => {
    const offer = await cheapestA10();
    const data = await compute.createInstance(offer, instanceConfig('22222222-bbbb'));
    // Booting, then active at a made-up loopback address nobody lets us in at: unchanged.
    expect(await compute.updateProvisioningData(data, keys)).toEqual(data);
    await expect
      .poll(() => emulator.state().instances.find((each) => each.id === data.instance_id)?.status)
      .toBe('active');
    expect(await compute.updateProvisioningData(data, keys)).toEqual(data);
    expect(await compute.instanceStatus(data)).toBe('running');

    await compute.terminateInstance(data.instance_id);
    await compute.terminateInstance(data.instance_id);
    await expect(compute.updateProvisioningData(data, keys)).rejects.toSatisfy((error) =>
      ProvisioningError.isInstance(error),
    );
    await expect.poll(() => compute.instanceStatus(data)).toBe('gone');
    // Forgotten by Lambda: terminating it again still succeeds.
    await expect.poll(() => emulator.state().instances.length).toBe(0);
    await compute.terminateInstance(data.instance_id);
  });
});

describe('the sealed bootstrap', () => {
  it('opens only with the key it was sealed with', () => {
    const sealed = sealLambdaBootstrap({ agent_token: 't', agent_download_url: null }, keys.privateKey);
    expect(openLambdaBootstrap(sealed, `${keys.privateKey}\n`)).toEqual({
      agent_token: 't',
      agent_download_url: null,
    });
    const other = generateEd25519KeyPair('other');
    expect(() => openLambdaBootstrap(sealed, other.privateKey)).toThrow();
  });
});
