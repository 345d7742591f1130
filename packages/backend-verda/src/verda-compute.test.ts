import { Catalog } from '@dstack/catalog';
import {
  BackendAuthenticationError,
  generateEd25519KeyPair,
  type InstanceConfiguration,
  NoCapacityError,
  ProvisioningError,
  RequirementsSchema,
} from '@dstack/core';
import type { VerdaEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerdaBackend, type VerdaCompute } from './verda-compute.js';
import { verdaConfigModels } from './verda-config.js';
import { emulatorConfig, startVerdaTestEmulator } from './verda-emulator.test.helpers.js';

const keys = generateEd25519KeyPair('project');
const l40s = (spot: boolean | null) =>
  RequirementsSchema.parse({
    resources: {
      cpu: { count: { min: 1 } },
      memory: { min: null },
      gpu: { name: ['L40S'], count: { min: 1, max: 1 } },
    },
    spot,
  });

let emulator: VerdaEmulator;
let compute: VerdaCompute;

function computeWith(clientSecret?: string): VerdaCompute {
  const base = emulatorConfig(emulator);
  const config = clientSecret ? { ...base, creds: { ...base.creds, client_secret: clientSecret } } : base;
  return createVerdaBackend({
    config: verdaConfigModels.config.parse(config),
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

beforeAll(async () => {
  emulator = await startVerdaTestEmulator();
  compute = computeWith();
});
afterAll(() => emulator?.close());

describe('VerdaCompute on the Verda emulator', () => {
  it('offers spot and on-demand rows of the catalog, each available where Verda says so', async () => {
    const offers = await compute.getOffers(l40s(null));
    expect(offers.map((offer) => [offer.region, offer.instance.resources.spot, offer.price])).toEqual([
      ['FIN-01', true, 0.32],
      ['FIN-02', true, 0.32],
      ['ICE-01', true, 0.32],
      ['FIN-01', false, 0.91],
      ['FIN-02', false, 0.91],
      ['ICE-01', false, 0.91],
    ]);
    expect(offers.every((offer) => offer.availability === 'available')).toBe(true);
    // The OS volume is at least the image's 50 GB.
    expect(offers[0]?.instance.resources.disk.size_mib).toBeGreaterThanOrEqual(50 * 1024);
  });

  it('deploys with its own key and startup script (the bootstrap), once per instance_id, and deletes them with it', async () => {
    const [offer] = await compute.getOffers(l40s(false));
    if (!offer) throw new Error('no offer');
    const first = await compute.createInstance(offer, instanceConfig('11111111-aaaa'));
    const again = await compute.createInstance(offer, instanceConfig('11111111-aaaa'));
    expect(again.instance_id).toBe(first.instance_id);
    expect(first).toMatchObject({ username: 'root', hostname: null, region: 'FIN-01' });
    const state = emulator.state();
    expect(state.instances).toHaveLength(1);
    expect(state.sshKeys).toHaveLength(1);
    expect(state.startupScripts).toHaveLength(1);

    await expect
      .poll(async () => (await compute.updateProvisioningData(first)).hostname)
      .toMatch(/^127\.78\./);
    await compute.terminateInstance(first.instance_id, first.region, first.backend_data);
    await compute.terminateInstance(first.instance_id, first.region, first.backend_data);
    expect(emulator.state()).toMatchObject({ sshKeys: [], startupScripts: [] });
    await expect(compute.updateProvisioningData(first)).rejects.toSatisfy((error) =>
      ProvisioningError.isInstance(error),
    );
  });

  it("maps Verda's refusals: capacity and funds to NoCapacityError (cleaning up), credentials to authentication", async () => {
    const [offer] = await compute.getOffers(l40s(false));
    if (!offer) throw new Error('no offer');
    emulator.addFault({ code: 'NO_CAPACITY', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('cap'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    emulator.addFault({ code: 'INSUFFICIENT_FUNDS', count: 1 });
    await expect(compute.createInstance(offer, instanceConfig('funds'))).rejects.toSatisfy((error) =>
      NoCapacityError.isInstance(error),
    );
    expect(emulator.state()).toMatchObject({ sshKeys: [], startupScripts: [] });
    await expect(computeWith('wrong-secret').getOffers(l40s(false))).rejects.toSatisfy((error) =>
      BackendAuthenticationError.isInstance(error),
    );
  });
});
