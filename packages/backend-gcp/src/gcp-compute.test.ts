import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  classifyBackendFailure,
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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGcpBackend, type GcpBackendSettings, type GcpCompute } from './gcp-compute.js';
import { type GcpBackendConfigWithCreds, gcpConfigModels } from './gcp-config.js';
import { GcpConfigurator } from './gcp-configurator.js';
import {
  emulatorConfig,
  FAST_OPERATIONS,
  type GcpTestEmulator,
  startGcpTestEmulator,
} from './gcp-emulator.test.helpers.js';

let emulator: GcpTestEmulator;
let compute: GcpCompute;

function makeCompute(
  extra: Partial<GcpBackendConfigWithCreds> = {},
  settings: Partial<GcpBackendSettings> = {},
  on: GcpTestEmulator = emulator,
): GcpCompute {
  return createGcpBackend({
    config: gcpConfigModels.config.parse(emulatorConfig(on.gcp, extra)),
    ...FAST_OPERATIONS,
    ...settings,
  });
}

beforeAll(async () => {
  emulator = await startGcpTestEmulator();
  compute = makeCompute({ regions: ['us-central1'] });
});
afterAll(async () => {
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

/** One T4, and a disk of `disk` GB when given. */
function t4(spot: boolean | null, disk?: { min: number | null; max: number | null }) {
  return RequirementsSchema.parse({
    resources: {
      cpu: { count: { min: 1 } },
      memory: { min: null },
      gpu: { name: ['T4'], count: { min: 1, max: 1 } },
      ...(disk ? { disk: { size: disk } } : {}),
    },
    spot,
  });
}

/** The cheapest available offer of `compute` for one T4. */
async function cheapestT4(spot: boolean, on: GcpCompute = compute): Promise<InstanceOfferWithAvailability> {
  const offer = (await on.getOffers(t4(spot))).find((each) => each.availability === 'available');
  if (!offer) throw new Error('no available offer');
  return offer;
}

/** Polls updateProvisioningData (bounded) until it has a hostname. */
async function untilRunning(
  data: JobProvisioningData,
  on: GcpCompute = compute,
): Promise<JobProvisioningData> {
  let current = data;
  for (let attempt = 0; attempt < 200 && current.hostname == null; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    current = await on.updateProvisioningData(current, { publicKey: '', privateKey: '' });
  }
  return current;
}

function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

// biome-ignore lint/suspicious/noExplicitAny: Compute's answers are read field by field
function instanceResource(data: JobProvisioningData): Promise<any> {
  return compute.api.get(`zones/${data.availability_zone}/instances/${data.instance_id}`);
}

describe('validateConfig', () => {
  const configurator = new GcpConfigurator();
  /** A config from the server's config.yml, which may name the emulator's endpoints. */
  const options: ValidateConfigOptions = {
    origin: 'server_config',
    defaultCredsEnabled: true,
    customEndpointsAllowed: true,
  };
  const fromApi: ValidateConfigOptions = { ...options, origin: 'api', customEndpointsAllowed: false };

  it('accepts the emulator key and its regions', async () => {
    await configurator.validateConfig(emulatorConfig(emulator.gcp), options);
  });

  it('names project_id for a project the key cannot use, regions[i] for an unknown region', async () => {
    const otherProject = await caught(
      configurator.validateConfig(emulatorConfig(emulator.gcp, { project_id: 'someone-else' }), options),
    );
    expect(ServerClientError.isInstance(otherProject)).toBe(true);
    expect(otherProject).toMatchObject({ fields: [['project_id']] });

    const region = await caught(
      configurator.validateConfig(
        emulatorConfig(emulator.gcp, { regions: ['us-central1', 'mars-north1'] }),
        options,
      ),
    );
    expect(region).toMatchObject({ fields: [['regions', '1']] });
  });

  it('takes application default credentials from GOOGLE_APPLICATION_CREDENTIALS', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gcp-adc-'));
    const keyFile = join(directory, 'key.json');
    writeFileSync(keyFile, JSON.stringify(emulator.gcp.serviceAccountJson()));
    const before = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = keyFile;
    try {
      await configurator.validateConfig(
        emulatorConfig(emulator.gcp, { creds: { type: 'default' } }),
        options,
      );
      const error = await caught(
        configurator.validateConfig(emulatorConfig(emulator.gcp, { creds: { type: 'default' } }), {
          ...options,
          defaultCredsEnabled: false,
        }),
      );
      expect(error).toMatchObject({ fields: [['creds', 'type']] });
    } finally {
      if (before === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = before;
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refuses from the API a key file, a custom endpoint or token_uri, naming the field, before any call', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gcp-file-'));
    const keyFile = join(directory, 'key.json');
    writeFileSync(keyFile, JSON.stringify(emulator.gcp.serviceAccountJson()));
    const before = emulator.gcp.server.requests.length;
    try {
      const file = await caught(
        configurator.validateConfig(
          emulatorConfig(emulator.gcp, { creds: { type: 'service_account', filename: keyFile } }),
          { ...fromApi, customEndpointsAllowed: true },
        ),
      );
      expect(file).toMatchObject({ fields: [['creds', 'filename']] });
      expect(String(file)).toContain('send the file');
      const endpoint = await caught(configurator.validateConfig(emulatorConfig(emulator.gcp), fromApi));
      expect(endpoint).toMatchObject({ fields: [['endpoint_url']] });
      // Google's Compute URL is not custom; the emulator key's token_uri is.
      const tokenUri = await caught(
        configurator.validateConfig(emulatorConfig(emulator.gcp, { endpoint_url: null }), fromApi),
      );
      expect(tokenUri).toMatchObject({ fields: [['creds', 'data']] });
      expect(String(tokenUri)).toContain('token_uri');
      expect(emulator.gcp.server.requests.length).toBe(before);
      await configurator.validateConfig(emulatorConfig(emulator.gcp), {
        ...fromApi,
        customEndpointsAllowed: true,
      });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('names creds.data when Google refuses the key (revoked)', async () => {
    const fault = emulator.gcp.addFault({ code: 'INVALID_GRANT' });
    try {
      const error = await caught(configurator.validateConfig(emulatorConfig(emulator.gcp), options));
      expect(InvalidCredentialsError.isInstance(error)).toBe(true);
      expect((error as InvalidCredentialsError).fields).toEqual([['creds', 'data']]);
    } finally {
      emulator.gcp.removeFault(fault.id);
    }
  });
});

describe('getOffers', () => {
  it('collapses zones into regions, keeping the zones', async () => {
    const offers = await makeCompute().getOffers(t4(false));

    expect(offers.length).toBeGreaterThan(0);
    for (const offer of offers) {
      expect(emulator.gcp.regions).toContain(offer.region);
      expect(offer.availability_zones?.length).toBeGreaterThan(0);
      for (const zone of offer.availability_zones ?? [])
        expect(zone.startsWith(`${offer.region}-`)).toBe(true);
      expect(offer.instance.resources.disk.size_mib).toBe(100 * 1024);
    }
    const keys = offers.map((offer) => `${offer.instance.name} ${offer.region}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(offers.map((offer) => offer.price)).toEqual(
      [...offers.map((offer) => offer.price)].sort((a, b) => a - b),
    );
  });

  it('keeps disks within 20 GB–32 TB', async () => {
    const small = await compute.getOffers(t4(false, { min: 10, max: 30 }));
    expect(small[0]?.instance.resources.disk.size_mib).toBe(20 * 1024);
    expect(await compute.getOffers(t4(false, { min: 40 * 1024, max: null }))).toEqual([]);
  });

  it('marks offers the region GPU quota cannot take no_quota', async () => {
    const limited = await startGcpTestEmulator({ quotas: { NVIDIA_T4_GPUS: 0 } });
    try {
      const on = makeCompute({}, {}, limited);
      const onDemand = await on.getOffers(t4(false));
      const spot = await on.getOffers(t4(true));
      expect(new Set(onDemand.map((offer) => offer.availability))).toEqual(new Set(['no_quota']));
      expect(new Set(spot.map((offer) => offer.availability))).toEqual(new Set(['available']));
    } finally {
      await limited.close();
    }
  });
});

describe('createInstance', () => {
  it("launches dstack's instance body and reaches RUNNING with its external IP", async () => {
    const offer = await cheapestT4(false);
    const data = await compute.createInstance(offer, instanceConfig(), null);

    expect(data).toMatchObject({ hostname: null, username: 'ubuntu', region: 'us-central1' });
    expect(offer.availability_zones?.[0]).toBe(data.availability_zone);
    const resource = await instanceResource(data);
    const metadata = Object.fromEntries(
      (resource.metadata.items as { key: string; value: string }[]).map((item) => [item.key, item.value]),
    );
    expect(metadata['user-data']?.startsWith('#cloud-config')).toBe(true);
    expect(metadata['user-data']).not.toContain('agent-token --');
    expect(metadata['ssh-keys']).toBe('ubuntu:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3x project');
    expect(resource.labels).toMatchObject({ owner: 'dstack', dstack_project: 'main', team: 'ml' });
    expect(resource.tags.items).toEqual(['dstack-runner-instance']);
    expect(resource.scheduling).toMatchObject({
      provisioningModel: 'STANDARD',
      onHostMaintenance: 'TERMINATE',
    });
    if (offer.instance.name.startsWith('n1-')) {
      expect(resource.guestAccelerators[0].acceleratorType).toMatch(/\/acceleratorTypes\/nvidia-tesla-t4$/);
    }
    const firewall = await compute.api.get<{ allowed: unknown; targetTags: string[] }>(
      'global/firewalls/dstack-ssh-in-global-networks-default',
    );
    expect(firewall).toMatchObject({
      allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
      targetTags: ['dstack-runner-instance'],
    });

    const running = await untilRunning(data);
    expect(running.hostname).toMatch(/^34\./);
    expect(running.internal_ip).toMatch(/^10\./);
    expect(running.ssh_port).toBe(22);
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
  });

  it('tolerates a firewall rule another server made (409) and launches', async () => {
    const other = makeCompute({ regions: ['us-central1'] });
    const data = await other.createInstance(await cheapestT4(false, other), instanceConfig(), null);
    expect(data.instance_id).toMatch(/^dstack-main-fleet-0-/);
    await other.terminateInstance(data.instance_id, data.region, data.backend_data);
  });

  it('moves to the next zone when the pool-exhausted error arrives late in the operation', async () => {
    const offer = await cheapestT4(false);
    const [first, second] = offer.availability_zones ?? [];
    if (!first || !second) throw new Error('the offer has fewer than two zones');
    emulator.gcp.addFault({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', zone: first, count: 1, delayMs: 60 });

    const data = await compute.createInstance(offer, instanceConfig(), null);

    expect(data.availability_zone).toBe(second);
    expect((await untilRunning(data)).hostname).not.toBeNull();
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
  });

  it('is NoCapacityError when every zone is over quota', async () => {
    const offer = await cheapestT4(false);
    const fault = emulator.gcp.addFault({ code: 'QUOTA_EXCEEDED', machineType: offer.instance.name });
    try {
      const error = await caught(compute.createInstance(offer, instanceConfig(), null));
      expect(NoCapacityError.isInstance(error)).toBe(true);
      expect(String(error)).toContain('QUOTA_EXCEEDED');
    } finally {
      emulator.gcp.removeFault(fault.id);
    }
  });

  it('fails provisioning with the late error when it arrives after the launch stopped waiting', async () => {
    const impatient = makeCompute({ regions: ['us-central1'] }, { operationWaitMs: 50 });
    const offer = await cheapestT4(false, impatient);
    const fault = emulator.gcp.addFault({
      code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
      machineType: offer.instance.name,
      count: 1,
      delayMs: 400,
    });
    try {
      const data = await impatient.createInstance(offer, instanceConfig(), null);
      expect(data.availability_zone).toBe(offer.availability_zones?.[0]);
      const error = await caught(untilRunning(data, impatient));
      expect(ProvisioningError.isInstance(error)).toBe(true);
      expect(String(error)).toContain('ZONE_RESOURCE_POOL_EXHAUSTED');
    } finally {
      emulator.gcp.removeFault(fault.id);
    }
  });

  it('gives a revoked key as an authentication failure, not NoCapacityError', async () => {
    const offer = await cheapestT4(false);
    const fault = emulator.gcp.addFault({ code: 'INVALID_GRANT' });
    try {
      const error = await caught(
        makeCompute({ regions: ['us-central1'] }).createInstance(offer, instanceConfig(), null),
      );
      expect(NoCapacityError.isInstance(error)).toBe(false);
      expect(classifyBackendFailure(error)).toBe('authentication');
    } finally {
      emulator.gcp.removeFault(fault.id);
    }
  });

  it('gets through throttling (429 rateLimitExceeded on every other call)', async () => {
    const fault = emulator.gcp.addFault({ code: 'RATE_LIMIT_EXCEEDED', everyNth: 2 });
    try {
      const data = await compute.createInstance(await cheapestT4(false), instanceConfig(), null);
      expect((await untilRunning(data)).hostname).not.toBeNull();
      await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
    } finally {
      emulator.gcp.removeFault(fault.id);
    }
  });

  it('honours vpc_name (network and firewall rule) and vm_service_account', async () => {
    const custom = makeCompute({
      regions: ['us-central1'],
      vpc_name: 'ml-net',
      vm_service_account: 'runner@dstack-emulator.iam.gserviceaccount.com',
    });
    const data = await custom.createInstance(await cheapestT4(false, custom), instanceConfig(), null);
    const resource = await instanceResource(data);
    expect(resource.networkInterfaces[0].network).toMatch(/\/global\/networks\/ml-net$/);
    expect(resource.serviceAccounts).toEqual([
      {
        email: 'runner@dstack-emulator.iam.gserviceaccount.com',
        scopes: ['https://www.googleapis.com/auth/cloud-platform'],
      },
    ]);
    const firewall = await custom.api.get<{ network: string }>(
      'global/firewalls/dstack-ssh-in-global-networks-ml-net',
    );
    expect(firewall.network).toMatch(/global\/networks\/ml-net$/);
    await custom.terminateInstance(data.instance_id, data.region, data.backend_data);
  });

  it('launches without an external IP when public_ips is false, reached at the internal IP', async () => {
    const internal = makeCompute({ regions: ['us-central1'], public_ips: false, nat_check: false });
    const data = await internal.createInstance(await cheapestT4(false, internal), instanceConfig(), null);
    const resource = await instanceResource(data);
    expect(resource.networkInterfaces[0].accessConfigs ?? []).toEqual([]);
    const running = await untilRunning(data, internal);
    expect(running.hostname).toBe(running.internal_ip);
    await internal.terminateInstance(data.instance_id, data.region, data.backend_data);
  });
});

describe('spot and instanceStatus', () => {
  it('launches SPOT, reports a preemption as interrupted, and deletes the preempted instance', async () => {
    const data = await compute.createInstance(await cheapestT4(true), instanceConfig(), null);
    const resource = await instanceResource(data);
    expect(resource.scheduling).toMatchObject({
      provisioningModel: 'SPOT',
      instanceTerminationAction: 'STOP',
    });
    await untilRunning(data);
    expect(await compute.instanceStatus(data)).toBe('running');

    emulator.gcp.preemptInstance(data.instance_id);

    expect(await compute.instanceStatus(data)).toBe('interrupted');
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
  });

  it('reports an instance deleted behind its back as gone', async () => {
    const data = await compute.createInstance(await cheapestT4(false), instanceConfig(), null);
    emulator.gcp.removeInstance(data.instance_id);
    expect(await compute.instanceStatus(data)).toBe('gone');
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
  });
});
