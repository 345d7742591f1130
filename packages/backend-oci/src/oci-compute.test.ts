import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NoCapacityError } from '@dstack/core';
import {
  anyCpuOfferRequirements,
  conformanceInstanceConfiguration,
  generateProjectSshKeys,
} from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OciCompute } from './oci-compute.js';
import { OciConfigurator } from './oci-configurator.js';
import { emulatorConfig, type OciTestEmulator, startOciTestEmulator } from './oci-emulator.test.helpers.js';

// The backend made from an OCI CLI config file (creds `default`, its profile's `key_file`), as a
// server with such a file would: launches of what OCI refuses, and preemptible instances.
describe('oci launches on the emulator, creds from an OCI CLI config file', () => {
  let emulator: OciTestEmulator;
  let compute: OciCompute;
  const configurator = new OciConfigurator();
  const launch = (name: string) =>
    conformanceInstanceConfiguration({
      instanceId: `instance-${name}`,
      agentToken: 'token',
      instanceName: name,
      projectName: 'main',
      keys: generateProjectSshKeys(),
    });

  beforeAll(async () => {
    emulator = await startOciTestEmulator();
    const { user } = emulator.oci;
    const directory = mkdtempSync(join(tmpdir(), 'dstack-oci-config-'));
    writeFileSync(join(directory, 'key.pem'), user.privateKey);
    writeFileSync(
      join(directory, 'config'),
      `[DEFAULT]\nuser=ocid1.user.oc1..other\n\n[dstack]\nuser=${user.user}\nfingerprint=${user.fingerprint}\ntenancy=${user.tenancy}\nregion=${user.region}\nkey_file=${join(directory, 'key.pem')}\n`,
    );
    const config = emulatorConfig(emulator.oci, {
      regions: ['us-ashburn-1'],
      creds: { type: 'default', file: join(directory, 'config'), profile: 'dstack' },
    });
    await configurator.validateConfig(config, {
      origin: 'server_config',
      defaultCredsEnabled: true,
      customEndpointsAllowed: true,
    });
    const record = await configurator.createBackend('main', config);
    compute = await configurator.getCompute({ ...record, projectId: 'p', backendId: 'b' });
  });
  afterAll(() => emulator?.close());

  it("made the compartment, VCN and subnet once, and offers only dstack's shapes with their domains", async () => {
    expect(emulator.oci.state()).toMatchObject({
      compartments: ['dstack-main'],
      vcns: ['dstack-main-default-vcn'],
      subnets: ['dstack-main-default-subnet'],
    });
    const offers = await compute.getOffers(anyCpuOfferRequirements());
    const names = new Set(offers.map((offer) => offer.instance.name));
    expect(names.has('VM.GPU2.1') || names.has('VM.Standard.E4.Flex')).toBe(false);
    const a10 = offers.find((offer) => offer.instance.name === 'VM.GPU.A10.1');
    expect(a10).toMatchObject({
      availability: 'available',
      availability_zones: ['Uocm:US-ASHBURN-AD-1', 'Uocm:US-ASHBURN-AD-2'],
    });
    emulator.oci.addFault({ code: 'OutOfHostCapacity', shape: 'VM.GPU.A10.1' });
    try {
      const full = (await compute.getOffers(anyCpuOfferRequirements())).find(
        (offer) => offer.instance.name === 'VM.GPU.A10.1',
      );
      expect(full).toMatchObject({ availability: 'not_available', availability_zones: [] });
      if (!full) throw new Error('no offer');
      await expect(compute.createInstance(full, launch('full'), null)).rejects.toSatisfy((error: unknown) =>
        NoCapacityError.isInstance(error),
      );
    } finally {
      emulator.oci.clearFaults();
    }
  });

  it.each(['LimitExceeded', 'QuotaExceeded'] as const)(
    '%s is NoCapacityError and launches nothing',
    async (code) => {
      const offer = (await compute.getOffers(anyCpuOfferRequirements())).find(
        (each) => each.instance.name === 'VM.Standard2.4',
      );
      if (!offer) throw new Error('no offer');
      emulator.oci.addFault({ code, count: 1 });
      const before = emulator.oci.state().instances.length;
      const failure = await compute
        .createInstance(offer, launch(code.toLowerCase()), null)
        .catch((error: unknown) => error);
      expect(NoCapacityError.isInstance(failure)).toBe(true);
      expect(String((failure as Error).message)).toMatch(
        code === 'LimitExceeded' ? /service limits/ : /Quota exceeded/,
      );
      expect(emulator.oci.state().instances.length).toBe(before);
    },
  );

  it('launches a spot offer as a preemptible instance from the V100 image; once preempted it is interrupted', async () => {
    const offer = (await compute.getOffers(anyCpuOfferRequirements())).find(
      (each) => each.instance.name === 'VM.GPU3.1' && each.instance.resources.spot,
    );
    if (!offer) throw new Error('no spot V100 offer');
    const data = await compute.createInstance(offer, launch('spot'), null);
    const sent = emulator.oci.server.requestsTo('iaas POST /instances').at(-1)?.body as Record<
      string,
      Record<string, unknown>
    >;
    expect(sent.preemptibleInstanceConfig).toEqual({
      preemptionAction: { type: 'TERMINATE', preserveBootVolume: false },
    });
    // V100 needs NVIDIA's proprietary kernel modules: dstack's cuda image 0.10.
    expect(String(sent.sourceDetails?.imageId)).toContain('dstackcuda010');
    expect(Buffer.from(String(sent.metadata?.user_data), 'base64').toString('utf8')).toMatch(
      /^#cloud-config/,
    );
    expect(emulator.oci.state().instances.find((each) => each.id === data.instance_id)?.preemptible).toBe(
      true,
    );

    emulator.oci.preemptInstance(data.instance_id);
    let status = await compute.instanceStatus(data);
    for (let attempt = 0; status === 'running' && attempt < 100; attempt++)
      status = await compute.instanceStatus(data);
    expect(status).toBe('interrupted');
  });
});
