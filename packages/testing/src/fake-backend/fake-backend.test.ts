import { randomUUID } from 'node:crypto';
import {
  type Compute,
  type ComputeWithCreateInstance,
  InvalidCredentialsError,
  NoCapacityError,
  ProvisioningError,
  RequirementsSchema,
} from '@dstack/core';
import { ShimClient } from '@dstack/shim';
import { afterEach, describe, expect, it } from 'vitest';
import { conformanceInstanceConfiguration, conformanceRunJobParams } from '../conformance/job-fixtures.js';
import { generateProjectSshKeys } from '../conformance/project-ssh-keys.js';
import { createFakeBackend, type FakeBackend, type FakeBackendOptions } from './fake-backend.js';
import { FAKE_BACKEND_VALID_API_KEY } from './fake-backend-config.js';

const keys = generateProjectSshKeys();
const anyCpu = RequirementsSchema.parse({ resources: { cpu: { count: { min: 1 } }, memory: {} } });
const clouds: FakeBackend[] = [];
afterEach(async () => {
  await Promise.all(clouds.splice(0).map((cloud) => cloud.close()));
});

async function computeOf(
  options: FakeBackendOptions = {},
  regions?: string[],
): Promise<{ cloud: FakeBackend; compute: ComputeWithCreateInstance }> {
  const cloud = createFakeBackend(options);
  clouds.push(cloud);
  const configurator = cloud.plugin.createConfigurator();
  const config = { type: 'fake', regions, creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } };
  await configurator.validateConfig(config, {
    origin: 'server_config',
    defaultCredsEnabled: true,
    customEndpointsAllowed: true,
  });
  const record = await configurator.createBackend('main', config);
  const compute: Compute = await configurator.getCompute({ ...record, projectId: 'p', backendId: 'b' });
  return { cloud, compute: compute as ComputeWithCreateInstance };
}

const TEST_AGENT_TOKEN = 'fake-agent-token';

/** Launches a fleet instance; a fresh dstack instance id (idempotency key) unless `instanceId` is given. */
async function launch(
  compute: ComputeWithCreateInstance,
  name = 'fleet-0',
  instanceId: string = randomUUID(),
) {
  const [offer] = await compute.getOffers(anyCpu);
  if (!offer) throw new Error('no offer');
  return compute.createInstance(
    offer,
    conformanceInstanceConfiguration({
      instanceId,
      agentToken: TEST_AGENT_TOKEN,
      instanceName: name,
      projectName: 'main',
      keys,
    }),
    null,
  );
}

describe('the fake backend plugin', () => {
  it('accepts only the known API key, naming creds.api_key otherwise', async () => {
    const configurator = createFakeBackend().plugin.createConfigurator();
    const config = (apiKey: string) => ({ type: 'fake', creds: { type: 'api_key', api_key: apiKey } });

    await expect(
      configurator.validateConfig(config(FAKE_BACKEND_VALID_API_KEY), {
        origin: 'server_config',
        defaultCredsEnabled: true,
        customEndpointsAllowed: true,
      }),
    ).resolves.toBeUndefined();
    const error = await configurator
      .validateConfig(config('nope'), {
        origin: 'server_config',
        defaultCredsEnabled: true,
        customEndpointsAllowed: true,
      })
      .catch((e: unknown) => e);
    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect((error as InvalidCredentialsError).fields).toEqual([['creds', 'api_key']]);
  });

  it('stores fake-region-1 when the config names no regions', async () => {
    const configurator = createFakeBackend().plugin.createConfigurator();
    const record = await configurator.createBackend('main', {
      type: 'fake',
      creds: { type: 'api_key', api_key: 'k' },
    });
    expect(JSON.parse(record.config)).toEqual({
      type: 'fake',
      regions: ['fake-region-1'],
      project_name: 'main',
    });
  });
});

describe('the fake cloud capacity', () => {
  it('offers the configured instance types in the config regions, cheapest first', async () => {
    const { compute } = await computeOf(
      {
        capacity: {
          instanceTypes: [
            { name: 'a', cpus: 2, memoryGib: 4, price: 0.3 },
            { name: 'b', cpus: 4, memoryGib: 8, price: 0.1 },
          ],
          spot: 'on-demand',
          regions: ['r1', 'r2', 'r3'],
        },
      },
      ['r1', 'r3'],
    );

    const offers = await compute.getOffers(anyCpu);

    expect(offers.map((offer) => [offer.instance.name, offer.region, offer.price])).toEqual([
      ['b', 'r1', 0.1],
      ['b', 'r3', 0.1],
      ['a', 'r1', 0.3],
      ['a', 'r3', 0.3],
    ]);
  });

  it('marks offers of unavailable regions not_available and refuses to launch them', async () => {
    const { compute } = await computeOf({ capacity: { regions: ['r1'], unavailableRegions: ['r1'] } }, [
      'r1',
    ]);
    const [offer] = await compute.getOffers(anyCpu);
    expect(offer?.availability).toBe('not_available');
    if (!offer) return;
    const error = await compute
      .createInstance(
        offer,
        conformanceInstanceConfiguration({
          instanceId: 'instance-x',
          agentToken: TEST_AGENT_TOKEN,
          instanceName: 'x',
          projectName: 'main',
          keys,
        }),
        null,
      )
      .catch((e: unknown) => e);
    expect(NoCapacityError.isInstance(error)).toBe(true);
  });

  it('fails launches beyond the instance limit with NoCapacityError, until one is terminated', async () => {
    const { cloud, compute } = await computeOf({ instanceLimit: 1 });
    const first = await launch(compute);

    expect(NoCapacityError.isInstance(await launch(compute).catch((e: unknown) => e))).toBe(true);
    await compute.terminateInstance(first.instance_id, first.region);
    await expect(launch(compute)).resolves.toMatchObject({ backend: 'fake' });
    expect(cloud.liveInstances()).toHaveLength(1);
  });
});

describe('the fake cloud failures', () => {
  it('fails the next N launches with NoCapacityError', async () => {
    const { cloud, compute } = await computeOf();
    cloud.failNextLaunchWithNoCapacity(2);

    const outcomes = [];
    for (let i = 0; i < 3; i++)
      outcomes.push(
        await launch(compute).then(
          () => 'ok',
          (e: unknown) => (e as Error).name,
        ),
      );

    expect(outcomes).toEqual(['NoCapacityError', 'NoCapacityError', 'ok']);
  });

  it('throws injected errors from the named method', async () => {
    const { cloud, compute } = await computeOf();
    cloud.failNext('getOffers', () => new Error('provider is down'));

    await expect(compute.getOffers(anyCpu)).rejects.toThrow('provider is down');
    await expect(compute.getOffers(anyCpu)).resolves.not.toEqual([]);
  });

  it('provisions slowly: hostname after the configured number of polls', async () => {
    const { compute } = await computeOf({ provisioningPolls: 3 });
    let data = await launch(compute);
    const hostnames = [];
    for (let i = 0; i < 3; i++) {
      data = await compute.updateProvisioningData(data, keys);
      hostnames.push(data.hostname ?? null);
    }
    expect(hostnames.slice(0, 2)).toEqual([null, null]);
    expect(hostnames[2]).toMatch(/^192\.0\.2\.\d+$/);
  });

  it('fails polling of an instance that disappeared; terminating it still succeeds', async () => {
    const { cloud, compute } = await computeOf();
    const data = await launch(compute);
    await cloud.removeInstance(data.instance_id);

    const error = await compute.updateProvisioningData(data, keys).catch((e: unknown) => e);
    expect(ProvisioningError.isInstance(error)).toBe(true);
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
  });
});

describe('the fake cloud launches are keyed by dstack instance id', () => {
  it('returns the first launch for a second one with the same instance_id, launching nothing', async () => {
    const { cloud, compute } = await computeOf();
    const first = await launch(compute, 'fleet-0', 'instance-1');
    const again = await launch(compute, 'fleet-0', 'instance-1');
    const other = await launch(compute, 'fleet-1', 'instance-2');

    expect(again).toEqual(first);
    expect(other.instance_id).not.toBe(first.instance_id);
    expect(cloud.instances.size).toBe(2);
    expect(cloud.launchesOf('instance-1')).toBe(2);
    expect(cloud.instances.get(first.instance_id)?.dstackInstanceId).toBe('instance-1');
  });

  it('keys runJob by RunJobParams.instanceId', async () => {
    const { cloud, compute } = await computeOf();
    const [offer] = await compute.getOffers(anyCpu);
    if (!offer) throw new Error('no offer');
    const params = conformanceRunJobParams({
      instanceId: 'job-instance',
      agentToken: TEST_AGENT_TOKEN,
      runName: 'train',
      projectName: 'main',
      offer,
      requirements: anyCpu,
      keys,
    });
    const first = await compute.runJob(params);
    expect(await compute.runJob(params)).toEqual(first);
    expect(cloud.instances.size).toBe(1);
  });

  it('hangs the next launch after recording its machine, as a server that died mid-call sees it', async () => {
    const { cloud, compute } = await computeOf();
    cloud.hangNextLaunch();
    let settled = false;
    void launch(compute, 'fleet-0', 'instance-1').finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    expect(cloud.liveInstances()).toHaveLength(1);
    const retried = await launch(compute, 'fleet-0', 'instance-1');
    expect(retried.instance_id).toBe(cloud.liveInstances()[0]?.instanceId);
    expect(cloud.instances.size).toBe(1);
  });
});

describe('the fake cloud records calls and boots agents', () => {
  it('records every Compute call in order, with its arguments', async () => {
    const { cloud, compute } = await computeOf();
    const data = await launch(compute, 'recorded-0');
    await compute.terminateInstance(data.instance_id, data.region, data.backend_data);

    expect(cloud.calls.map((call) => call.method)).toEqual([
      'getOffers',
      'createInstance',
      'terminateInstance',
    ]);
    expect(cloud.callsOf('createInstance')[0]?.args[1]).toMatchObject({ instance_name: 'recorded-0' });
  });

  it('boots a real shim once the instance is running and stops it on terminate', async () => {
    const { cloud, compute } = await computeOf({ bootAgents: true });
    const ready = await compute.updateProvisioningData(await launch(compute), keys);
    const shimPort = (JSON.parse(ready.backend_data ?? '{}') as { agent_ports?: { shim?: number } })
      .agent_ports?.shim;

    expect(ready.hostname).toBe('127.0.0.1');
    const shim = new ShimClient(`http://127.0.0.1:${shimPort}`);
    expect(await shim.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    // The shim requires the token the launch handed over.
    await expect(shim.listTasks()).rejects.toMatchObject({ statusCode: 401 });
    expect(
      await new ShimClient(`http://127.0.0.1:${shimPort}`, { token: TEST_AGENT_TOKEN }).listTasks(),
    ).toEqual([]);
    expect(cloud.asEmulator().agentOf?.(ready.instance_id)?.url).toBe(`http://127.0.0.1:${shimPort}`);

    await compute.terminateInstance(ready.instance_id, ready.region, ready.backend_data);
    await expect(shim.healthcheck()).rejects.toThrow();
  });
});
