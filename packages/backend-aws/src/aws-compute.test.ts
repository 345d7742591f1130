import { randomUUID } from 'node:crypto';
import {
  BackendAuthenticationError,
  BackendRateLimitError,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  InvalidCredentialsError,
  type JobProvisioningData,
  NoCapacityError,
  ProvisioningError,
  RequirementsSchema,
  ServerClientError,
  type ValidateConfigOptions,
} from '@dstack/core';
import { anyCpuOfferRequirements } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsCompute, createAwsBackend } from './aws-compute.js';
import type { AwsBackendConfigWithCreds } from './aws-config.js';
import { AwsConfigurator } from './aws-configurator.js';
import { type AwsTestEmulator, emulatorConfig, startAwsTestEmulator } from './aws-emulator.test.helpers.js';

let emulator: AwsTestEmulator;
let compute: AwsCompute;

beforeAll(async () => {
  emulator = await startAwsTestEmulator();
  compute = createAwsBackend({ config: { ...emulatorConfig(emulator.aws), regions: ['us-west-2'] } });
});
afterAll(async () => {
  compute?.close();
  await emulator?.close();
});

function instanceConfig(extra: Partial<InstanceConfiguration> = {}): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: 'fleet-0',
    instance_id: randomUUID(),
    agent_token: 'agent-token',
    user: 'admin',
    ssh_keys: [{ public: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3x project' }],
    tags: { team: 'ml' },
    ...extra,
  };
}

async function cheapest(spot: boolean): Promise<InstanceOfferWithAvailability> {
  const offers = await compute.getOffers(
    RequirementsSchema.parse({ resources: { cpu: { count: { min: 2 } }, memory: { min: null } }, spot }),
  );
  const offer = offers.find((each) => each.availability === 'available');
  if (!offer) throw new Error('no available offer');
  return offer;
}

/** Polls updateProvisioningData (bounded) until it has a hostname. */
async function untilRunning(data: JobProvisioningData): Promise<JobProvisioningData> {
  let current = data;
  for (let attempt = 0; attempt < 200 && current.hostname == null; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    current = await compute.updateProvisioningData(current, { publicKey: '', privateKey: '' });
  }
  return current;
}

function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('validateConfig', () => {
  const configurator = new AwsConfigurator();
  /** A config from the server's config.yml, which may name the emulator's endpoint. */
  const fromConfigFile: ValidateConfigOptions = {
    origin: 'server_config',
    defaultCredsEnabled: true,
    customEndpointsAllowed: true,
  };

  it('accepts the emulator key and rejects a wrong one naming creds.access_key', async () => {
    await configurator.validateConfig(emulatorConfig(emulator.aws), fromConfigFile);
    const error = await caught(
      configurator.validateConfig(
        emulatorConfig(emulator.aws, {
          creds: { type: 'access_key', access_key: 'AKIANOTAKEY000000000', secret_key: 'x' },
        }),
        fromConfigFile,
      ),
    );
    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect((error as InvalidCredentialsError).fields).toEqual([['creds', 'access_key']]);
  });

  it('names an unknown region by its index', async () => {
    const error = await caught(
      configurator.validateConfig(
        emulatorConfig(emulator.aws, { regions: ['us-east-1', 'mars-north-1'] }),
        fromConfigFile,
      ),
    );
    expect(ServerClientError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ fields: [['regions', '1']] });
    expect(String(error)).toContain('mars-north-1');
  });

  it('names unknown fields and refuses vpc_name with vpc_ids', async () => {
    const unknown = await caught(
      configurator.validateConfig(
        { ...emulatorConfig(emulator.aws), vpc: 'x' } as AwsBackendConfigWithCreds,
        fromConfigFile,
      ),
    );
    expect(String(unknown)).toContain('vpc');
    const both = await caught(
      configurator.validateConfig(
        emulatorConfig(emulator.aws, { vpc_name: 'main', vpc_ids: { 'us-east-1': 'vpc-1' } }),
        fromConfigFile,
      ),
    );
    expect(both).toMatchObject({ fields: [['vpc_ids']] });
  });

  it('refuses default creds when the server disables them', async () => {
    const error = await caught(
      configurator.validateConfig(emulatorConfig(emulator.aws, { creds: { type: 'default' } }), {
        ...fromConfigFile,
        defaultCredsEnabled: false,
      }),
    );
    expect(error).toMatchObject({ fields: [['creds', 'type']] });
  });

  it('refuses endpoint_url from the API unless custom endpoints are allowed, before any call', async () => {
    const fromApi = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;
    const before = emulator.aws.server.requests.length;
    const error = await caught(configurator.validateConfig(emulatorConfig(emulator.aws), fromApi));
    expect(ServerClientError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ fields: [['endpoint_url']] });
    expect(String(error)).toContain('DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS');
    expect(emulator.aws.server.requests.length).toBe(before);
    await configurator.validateConfig(emulatorConfig(emulator.aws), {
      ...fromApi,
      customEndpointsAllowed: true,
    });
    const defaults = await caught(
      configurator.validateConfig(emulatorConfig(emulator.aws, { creds: { type: 'default' } }), fromApi),
    );
    expect(defaults).toMatchObject({ fields: [['creds', 'type']] });
    expect(String(defaults)).toContain('DSTACK_SERVER_ALLOW_DEFAULT_CREDS');
  });
});

describe('getOffers', () => {
  it("keeps the configured regions and dstack's families, disks 100 GB–16 TB, with zones", async () => {
    const offers = await compute.getOffers(anyCpuOfferRequirements());
    expect(offers.length).toBeGreaterThan(0);
    for (const offer of offers) {
      expect(offer.region).toBe('us-west-2');
      expect(offer.instance.name).toMatch(
        /^(m7i|c7i|r7i|t3|c5|m5|p4d|p4de|p5|p5e|p5en|p6-b\d+|g4dn|g5|g6|g6e|gr6|g7|g7e)\./,
      );
      expect(offer.instance.resources.disk.size_mib).toBe(100 * 1024);
      expect(offer.availability_zones?.every((zone) => zone.startsWith('us-west-2'))).toBe(true);
    }
    const huge = await compute.getOffers(
      RequirementsSchema.parse({
        resources: { cpu: { count: { min: 1 } }, memory: { min: null }, disk: { size: { min: 17000 } } },
      }),
    );
    expect(huge).toEqual([]);
  });

  it('marks offers no_quota where the vCPU quota of their class and market is 0', async () => {
    const quotaEmulator = await startAwsTestEmulator({ quotas: { 'L-1216C47A': 0 } });
    const quotaCompute = createAwsBackend({
      config: { ...emulatorConfig(quotaEmulator.aws), regions: ['us-east-1'] },
    });
    try {
      const offers = await quotaCompute.getOffers(anyCpuOfferRequirements());
      const onDemandCpu = offers.filter(
        (offer) => !offer.instance.resources.spot && offer.instance.resources.gpus.length === 0,
      );
      const spotCpu = offers.filter(
        (offer) => offer.instance.resources.spot && offer.instance.resources.gpus.length === 0,
      );
      expect(onDemandCpu.length).toBeGreaterThan(0);
      expect(onDemandCpu.every((offer) => offer.availability === 'no_quota')).toBe(true);
      expect(spotCpu.every((offer) => offer.availability === 'available')).toBe(true);
    } finally {
      quotaCompute.close();
      await quotaEmulator.close();
    }
  });
});

describe('createInstance', () => {
  it('launches with dstack tags and the security group, and fills the provisioning data once running', async () => {
    const offer = await cheapest(false);
    const started = await compute.createInstance(offer, instanceConfig(), null);
    expect(started).toMatchObject({ backend: 'aws', hostname: null, username: 'ubuntu', dockerized: true });
    const ready = await untilRunning(started);
    expect(ready.hostname).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(ready.internal_ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(ready.ssh_port).toBe(22);
    const state = emulator.aws.state().instances.find((instance) => instance.id === started.instance_id);
    expect(state).toMatchObject({ type: offer.instance.name, market: 'on-demand', state: 'running' });
    await compute.terminateInstance(started.instance_id, started.region);
  });

  it('returns the same instance for a second launch with the same instance_id', async () => {
    const offer = await cheapest(false);
    const config = instanceConfig();
    const first = await compute.createInstance(offer, config, null);
    const count = emulator.aws.state().instances.length;
    const second = await compute.createInstance(offer, config, null);
    expect(second.instance_id).toBe(first.instance_id);
    expect(emulator.aws.state().instances.length).toBe(count);
    await compute.terminateInstance(first.instance_id, first.region);
  });

  it('moves to the next zone on a capacity error, then gives NoCapacityError', async () => {
    const offer = await cheapest(false);
    const zones = offer.availability_zones ?? [];
    expect(zones.length).toBeGreaterThan(1);
    const fault = emulator.aws.addFault({
      code: 'InsufficientInstanceCapacity',
      zone: zones[0],
      instanceType: offer.instance.name,
    });
    try {
      const launched = await compute.createInstance(offer, instanceConfig(), null);
      expect(launched.availability_zone).toBe(zones[1]);
      await compute.terminateInstance(launched.instance_id, launched.region);
    } finally {
      emulator.aws.removeFault(fault.id);
    }
    const everywhere = emulator.aws.addFault({
      code: 'InsufficientInstanceCapacity',
      instanceType: offer.instance.name,
    });
    try {
      const before = emulator.aws.state().instances.length;
      const error = await caught(compute.createInstance(offer, instanceConfig(), null));
      expect(NoCapacityError.isInstance(error)).toBe(true);
      expect(String(error)).toContain(zones.at(-1));
      expect(emulator.aws.state().instances.length).toBe(before);
    } finally {
      emulator.aws.removeFault(everywhere.id);
    }
  });

  it('gives refused keys as BackendAuthenticationError, not NoCapacityError', async () => {
    const offer = await cheapest(false);
    const fault = emulator.aws.addFault({ code: 'AuthFailure' });
    try {
      const error = await caught(compute.createInstance(offer, instanceConfig(), null));
      expect(BackendAuthenticationError.isInstance(error)).toBe(true);
      expect(NoCapacityError.isInstance(error)).toBe(false);
      expect(String(error)).toContain('AuthFailure');
    } finally {
      emulator.aws.removeFault(fault.id);
    }
  });

  it('gives throttling that outlasts its retries as BackendRateLimitError', async () => {
    const offer = await cheapest(false);
    const fault = emulator.aws.addFault({ code: 'RequestLimitExceeded', action: 'RunInstances' });
    try {
      const before = emulator.aws.state().instances.length;
      const error = await caught(compute.createInstance(offer, instanceConfig(), null));
      expect(BackendRateLimitError.isInstance(error)).toBe(true);
      expect(String(error)).toContain('RequestLimitExceeded');
      expect(emulator.aws.state().instances.length).toBe(before);
    } finally {
      emulator.aws.removeFault(fault.id);
    }
  });

  it('repeats a launch whose connection was lost, with its ClientToken: one instance, in the zone it asked', async () => {
    const offer = await cheapest(false);
    const [zone] = offer.availability_zones ?? [];
    for (const afterAction of [false, true]) {
      emulator.aws.addFault({ code: 'ConnectionReset', action: 'RunInstances', afterAction, count: 1 });
      const before = emulator.aws.state().instances.length;
      const launched = await compute.createInstance(offer, instanceConfig(), null);
      expect(launched.availability_zone).toBe(zone);
      expect(emulator.aws.state().instances.length).toBe(before + 1);
      await compute.terminateInstance(launched.instance_id, launched.region);
    }
  });

  it('gives a bad parameter as an error at once, not NoCapacityError', async () => {
    const offer = await cheapest(false);
    const custom = createAwsBackend({
      config: {
        ...emulatorConfig(emulator.aws),
        regions: ['us-west-2'],
        os_images: { cpu: { name: 'no-such-image-*', user: 'admin' } },
      },
    });
    try {
      const error = await caught(custom.createInstance(offer, instanceConfig(), null));
      expect(error).toBeInstanceOf(Error);
      expect(NoCapacityError.isInstance(error)).toBe(false);
      expect(String(error)).toContain('no-such-image-*');
    } finally {
      custom.close();
    }
  });

  it('launches spot instances, and reports one EC2 took back as interrupted', async () => {
    const offer = await cheapest(true);
    const started = await compute.createInstance(offer, instanceConfig(), null);
    expect(emulator.aws.state().instances.find((each) => each.id === started.instance_id)?.market).toBe(
      'spot',
    );
    await untilRunning(started);
    expect(await compute.describeInstance(started.instance_id, started.region)).toMatchObject({
      state: 'running',
      interrupted: false,
    });
    expect(await compute.instanceStatus(started)).toBe('running');
    emulator.aws.interruptSpotInstance(started.instance_id);
    const status = await compute.describeInstance(started.instance_id, started.region);
    expect(status.interrupted).toBe(true);
    expect(status.stateReason).toBe('Server.SpotInstanceTermination');
    expect(await compute.instanceStatus(started)).toBe('interrupted');
    await compute.terminateInstance(started.instance_id, started.region);
  });

  it('fails provisioning of an instance that ended before it ran', async () => {
    const offer = await cheapest(false);
    const started = await compute.createInstance(offer, instanceConfig(), null);
    await new Promise((resolve) => setTimeout(resolve, 200)); // past the NotFound window
    await compute.terminateInstance(started.instance_id, started.region);
    expect(await compute.instanceStatus(started)).toBe('gone');
    const error = await caught(untilRunning(started));
    expect(ProvisioningError.isInstance(error)).toBe(true);
  });
});

describe('createGatewayReplica', () => {
  it("launches dstack's default gateway type, t3.micro, when the configuration names none", async () => {
    const configuration = {
      project_name: 'main',
      instance_name: `gateway-${randomUUID().slice(0, 8)}`,
      backend: 'aws' as const,
      region: 'us-west-2',
      instance_type: null,
      public_ip: true,
      ssh_key_pub: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3x project',
      certificate: null,
      agent_token: 'gateway-agent-token',
    };
    const gateway = await compute.createGatewayReplica(configuration);
    try {
      const launched = emulator.aws.state().instances.find((each) => each.id === gateway.instance_id);
      expect(launched).toMatchObject({ type: 't3.micro', market: 'on-demand', state: 'running' });
      expect(gateway.ip_address).toBeTruthy();
    } finally {
      await compute.terminateGatewayReplica(gateway.instance_id, configuration, gateway.backend_data);
    }
  });
});

describe('terminateInstance', () => {
  it('is idempotent, and done for an id EC2 does not know', async () => {
    const offer = await cheapest(false);
    const started = await compute.createInstance(offer, instanceConfig(), null);
    await compute.terminateInstance(started.instance_id, started.region);
    await compute.terminateInstance(started.instance_id, started.region);
    await compute.terminateInstance('i-0123456789abcdef0', 'us-west-2');
    expect(emulator.aws.state().instances.find((each) => each.id === started.instance_id)?.state).toMatch(
      /shutting-down|terminated/,
    );
  });
});

describe('cluster placement groups and EBS volumes', () => {
  const group = {
    name: 'dstack-main-cluster-pg-abcd1234',
    project_name: 'main',
    configuration: { backend: 'aws' as const, region: 'us-west-2', placement_strategy: 'cluster' as const },
  };

  function volume(configuration: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    return {
      id: randomUUID(),
      name: 'data',
      user: 'admin',
      project_name: 'main',
      configuration: {
        type: 'volume' as const,
        backend: 'aws' as const,
        region: 'us-west-2',
        ...configuration,
      },
      external: configuration.volume_id != null,
      created_at: new Date().toISOString(),
      status: 'submitted' as const,
      deleted: false,
      cost: 0,
      ...extra,
    };
  }

  it('launches a fleet into its placement group, which is deleted once the fleet is gone', async () => {
    const offers = await compute.getOffers(anyCpuOfferRequirements());
    const burstable = offers.find((each) => /^t[23]\./.test(each.instance.name));
    if (burstable) expect(compute.isSuitablePlacementGroup(group, burstable)).toBe(false);
    const offer = offers.find(
      (each) =>
        each.region === 'us-west-2' &&
        each.availability === 'available' &&
        !/^t[23]\./.test(each.instance.name),
    );
    if (!offer) throw new Error('no offer for a cluster');
    expect(compute.isSuitablePlacementGroup(group, offer)).toBe(true);
    expect(compute.isSuitablePlacementGroup(group, { ...offer, region: 'us-east-1' })).toBe(false);
    await compute.createPlacementGroup(group, offer);
    // Repeated (the server died before it stored the answer): the same group.
    await compute.createPlacementGroup(group, offer);
    const started = await compute.createInstance(offer, instanceConfig(), group);
    expect(emulator.aws.state().placementGroups).toEqual([
      expect.objectContaining({ name: group.name, strategy: 'cluster', instances: [started.instance_id] }),
    ]);
    // In use while its instance lives: the server tries again later.
    await expect(compute.deletePlacementGroup(group)).rejects.toThrow('is in use');
    await compute.terminateInstance(started.instance_id, started.region);
    // Free once the instance has finished shutting down: tried until it is, then once more (idempotent).
    await vi.waitFor(() => compute.deletePlacementGroup(group), { timeout: 30_000, interval: 50 });
    await compute.deletePlacementGroup(group);
    expect(emulator.aws.state().placementGroups).toEqual([]);
  });

  it('creates a gp3 volume in the asked zone, attaches it as /dev/sdf, and detaches and deletes it', async () => {
    const data = volume({ size: 10, availability_zone: 'us-west-2b', tags: { team: 'ml' } });
    const provisioned = await compute.createVolume(data);
    expect(provisioned).toMatchObject({ size_gb: 10, availability_zone: 'us-west-2b', price: 0.8 });
    expect(JSON.parse(provisioned.backend_data ?? '{}')).toEqual({ volume_type: 'gp3', iops: 3000 });
    // Idempotent on dstack's volume id.
    expect((await compute.createVolume(data)).volume_id).toBe(provisioned.volume_id);
    expect(await compute.registerVolume(volume({ volume_id: provisioned.volume_id }))).toMatchObject({
      volume_id: provisioned.volume_id,
      size_gb: 10,
    });
    await expect(compute.registerVolume(volume({ volume_id: 'vol-0123456789abcdef0' }))).rejects.toThrow(
      'volume_id "vol-0123456789abcdef0": no such EBS volume in us-west-2',
    );
    // dstack's docs register `vol1235`: EC2 calls it malformed, and the error names the field.
    await expect(compute.registerVolume(volume({ volume_id: 'vol1235' }))).rejects.toThrow(
      'volume_id "vol1235" is not an EBS volume id (vol- and hex digits): Invalid id: "vol1235" (expecting "vol-...")',
    );

    const offer = await cheapest(false);
    const inZoneA = await untilRunning(
      await compute.createInstance({ ...offer, availability_zones: ['us-west-2a'] }, instanceConfig(), null),
    );
    const inZoneB = await untilRunning(
      await compute.createInstance({ ...offer, availability_zones: ['us-west-2b'] }, instanceConfig(), null),
    );
    const withData = { ...data, provisioning_data: provisioned };
    await expect(compute.attachVolume(withData, inZoneA)).rejects.toThrow('Volume zone is different');
    expect(await compute.attachVolume(withData, inZoneB)).toEqual({ device_name: '/dev/sdf' });
    expect(emulator.aws.state().volumes[0]?.attachment).toMatchObject({
      status: 'attached',
      device: '/dev/sdf',
    });
    expect(await compute.isVolumeDetached(withData, inZoneB)).toBe(false);
    await expect(compute.deleteVolume(withData)).rejects.toThrow('is currently attached');

    const attached = {
      ...withData,
      attachments: [
        {
          instance: { name: 'fleet-0', instance_num: 0, instance_id: inZoneB.instance_id },
          attachment_data: { device_name: '/dev/sdf' },
        },
      ],
    };
    await compute.detachVolume(attached, inZoneB);
    for (let tries = 0; tries < 100 && !(await compute.isVolumeDetached(attached, inZoneB)); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await compute.isVolumeDetached(attached, inZoneB)).toBe(true);
    // Detached already: nothing to do.
    await compute.detachVolume(attached, inZoneB);
    await compute.deleteVolume(attached);
    await compute.deleteVolume(attached);
    expect(emulator.aws.state().volumes).toEqual([]);
    await compute.terminateInstance(inZoneA.instance_id, inZoneA.region);
    await compute.terminateInstance(inZoneB.instance_id, inZoneB.region);
  });
});
