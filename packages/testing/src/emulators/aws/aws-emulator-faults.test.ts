import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeRegionsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  RunInstancesCommand,
  type RunInstancesCommandInput,
} from '@aws-sdk/client-ec2';
import { GetServiceQuotaCommand } from '@aws-sdk/client-service-quotas';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterEach, describe, expect, it } from 'vitest';
import type { AwsEmulator } from './aws-emulator.js';
import {
  RecordingHosts,
  sdkClients,
  settle,
  startTestEmulator,
  TEST_TIMELINE,
} from './aws-emulator.test.helpers.js';
import { parseAwsFault, parseAwsFaultFlag } from './aws-emulator-faults.js';

let emulator: AwsEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof startTestEmulator>[0] = {}) {
  const started = await startTestEmulator(options);
  emulator = started.emulator;
  return { ...started, ...sdkClients(started.emulator) };
}

async function launch(ec2: EC2Client, zone: string, overrides: Partial<RunInstancesCommandInput> = {}) {
  const images = await ec2.send(
    new DescribeImagesCommand({ Filters: [{ Name: 'name', Values: ['dstack-0.19.40'] }] }),
  );
  const subnets = await ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'availability-zone', Values: [zone] }] }),
  );
  return ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images?.[0]?.ImageId,
      InstanceType: 'g5.xlarge',
      MinCount: 1,
      MaxCount: 1,
      SubnetId: subnets.Subnets?.[0]?.SubnetId,
      ...overrides,
    }),
  );
}

function ec2Attempts(action: string) {
  return (emulator?.server.requestsTo('ec2') ?? []).filter(
    (each) => (each.body as Record<string, string>).Action === action,
  );
}

describe('capacity faults', () => {
  it('InsufficientInstanceCapacity hits one type in one zone and market, every SDK attempt', async () => {
    const { ec2 } = await start({
      faults: [
        {
          code: 'InsufficientInstanceCapacity',
          instanceType: 'g5.xlarge',
          zone: 'us-east-1a',
          market: 'on-demand',
        },
      ],
    });
    await expect(launch(ec2, 'us-east-1a')).rejects.toMatchObject({
      name: 'InsufficientInstanceCapacity',
      $metadata: { httpStatusCode: 500, attempts: 3 },
      message: expect.stringContaining(
        'sufficient g5.xlarge capacity in the Availability Zone you requested (us-east-1a)',
      ),
    });
    expect(ec2Attempts('RunInstances')).toHaveLength(3);

    // The next zone, another type and the spot market still have capacity.
    await expect(launch(ec2, 'us-east-1b')).resolves.toMatchObject({ Instances: [expect.anything()] });
    await expect(launch(ec2, 'us-east-1a', { InstanceType: 'g5.2xlarge' })).resolves.toBeDefined();
    await expect(
      launch(ec2, 'us-east-1a', { InstanceMarketOptions: { MarketType: 'spot' } }),
    ).resolves.toBeDefined();
  });

  it('Unsupported when the type is not offered in the zone, or by fault', async () => {
    const { ec2 } = await start({ faults: [{ code: 'Unsupported', instanceType: 'g5.2xlarge' }] });
    const offered = new Set(
      emulator?.data.offerings
        .filter((each) => each.instanceType === 'p4d.24xlarge' && each.region === 'us-east-1')
        .map((each) => each.zone),
    );
    const missingZone = emulator?.data.zonesOf('us-east-1').find((zone) => !offered.has(zone.name));
    expect(missingZone).toBeDefined();
    await expect(
      launch(ec2, missingZone?.name ?? '', { InstanceType: 'p4d.24xlarge' }),
    ).rejects.toMatchObject({
      name: 'Unsupported',
      $metadata: { httpStatusCode: 400, attempts: 1 },
    });
    await expect(launch(ec2, 'us-east-1a', { InstanceType: 'g5.2xlarge' })).rejects.toMatchObject({
      name: 'Unsupported',
    });
  });

  it('SpotMaxPriceTooLow when the max price is under the zone spot price', async () => {
    const { ec2 } = await start();
    await expect(
      launch(ec2, 'us-east-1a', {
        InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { MaxPrice: '0.0001' } },
      }),
    ).rejects.toMatchObject({ name: 'SpotMaxPriceTooLow' });
  });
});

describe('the conformance suite hooks', () => {
  it('failNextLaunchWithNoCapacity fails every zone and retry of the next launch (one ClientToken), not the one after', async () => {
    const { ec2 } = await start();
    emulator?.failNextLaunchWithNoCapacity();
    for (const zone of ['us-east-1a', 'us-east-1b']) {
      await expect(launch(ec2, zone, { ClientToken: 'instance-1' })).rejects.toMatchObject({
        name: 'InsufficientInstanceCapacity',
      });
    }
    expect(ec2Attempts('RunInstances')).toHaveLength(6);
    await expect(launch(ec2, 'us-east-1a', { ClientToken: 'instance-2' })).resolves.toBeDefined();
    expect(emulator?.faults()).toEqual([]);
    expect(emulator?.launchedMachineCount()).toBe(1);
  });

  it('removeInstance makes an instance unknown and stops its host', async () => {
    const hosts = new RecordingHosts();
    const { ec2, clock } = await start({ hosts });
    const id = (await launch(ec2, 'us-east-1a')).Instances?.[0]?.InstanceId ?? '';
    clock.advance(TEST_TIMELINE.notFoundWindowMs);
    emulator?.removeInstance(id);
    await settle();
    expect(hosts.terminated).toEqual([id]);
    await expect(ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).rejects.toMatchObject({
      name: 'InvalidInstanceID.NotFound',
    });
    expect(emulator?.launchedMachineCount()).toBe(1);
  });
});

describe('quota faults', () => {
  it('VcpuLimitExceeded zeroes the on-demand quota of the type class, in Service Quotas and RunInstances', async () => {
    const { ec2, quotas } = await start({
      faults: [{ code: 'VcpuLimitExceeded', instanceType: 'g5.xlarge' }],
    });
    const g = await quotas.send(new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-DB2E81BA' }));
    expect(g.Quota?.Value).toBe(0);
    const standard = await quotas.send(
      new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-1216C47A' }),
    );
    expect(standard.Quota?.Value).toBeGreaterThan(0);
    await expect(launch(ec2, 'us-east-1a')).rejects.toMatchObject({
      name: 'VcpuLimitExceeded',
      message: expect.stringContaining('current vCPU limit of 0'),
    });
    // Spot has its own quota.
    await expect(
      launch(ec2, 'us-east-1a', { InstanceMarketOptions: { MarketType: 'spot' } }),
    ).resolves.toBeDefined();
  });

  it('counts running vCPUs against the configured quota', async () => {
    const { ec2 } = await start({ quotas: { 'L-DB2E81BA': 8 } });
    await launch(ec2, 'us-east-1a');
    await launch(ec2, 'us-east-1a');
    await expect(launch(ec2, 'us-east-1a')).rejects.toMatchObject({ name: 'VcpuLimitExceeded' });
  });

  it('MaxSpotInstanceCountExceeded zeroes the spot quota', async () => {
    const { ec2, quotas } = await start({ faults: [{ code: 'MaxSpotInstanceCountExceeded' }] });
    const spotG = await quotas.send(
      new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-3819A6DF' }),
    );
    expect(spotG.Quota?.Value).toBe(0);
    await expect(
      launch(ec2, 'us-east-1a', { InstanceMarketOptions: { MarketType: 'spot' } }),
    ).rejects.toMatchObject({
      name: 'MaxSpotInstanceCountExceeded',
    });
  });
});

describe('throttling, bad keys, slow IPs', () => {
  it('RequestLimitExceeded answers 503 and the SDK retries through a short burst', async () => {
    const { ec2 } = await start({
      faults: [{ code: 'RequestLimitExceeded', action: 'DescribeRegions', count: 2 }],
    });
    const answer = await ec2.send(new DescribeRegionsCommand({}));
    expect(answer.$metadata.attempts).toBe(3);
    expect(ec2Attempts('DescribeRegions').map((each) => each.status)).toEqual([503, 503, 200]);
  });

  it('RequestLimitExceeded that lasts reaches the caller', async () => {
    const { ec2 } = await start({ faults: [{ code: 'RequestLimitExceeded' }] });
    await expect(ec2.send(new DescribeRegionsCommand({}))).rejects.toMatchObject({
      name: 'RequestLimitExceeded',
      $metadata: { httpStatusCode: 503 },
    });
  });

  it('AuthFailure revokes the emulator key for every service until removed', async () => {
    const { ec2, sts } = await start();
    const fault = emulator?.addFault({ code: 'AuthFailure' });
    await expect(ec2.send(new DescribeRegionsCommand({}))).rejects.toMatchObject({ name: 'AuthFailure' });
    await expect(sts.send(new GetCallerIdentityCommand({}))).rejects.toMatchObject({
      name: 'InvalidClientTokenId',
    });
    emulator?.removeFault(fault?.id ?? '');
    await expect(ec2.send(new DescribeRegionsCommand({}))).resolves.toBeDefined();
  });

  it('SlowPublicIp: the instance runs without a public IP for delayMs', async () => {
    const { ec2, clock } = await start({ faults: [{ code: 'SlowPublicIp', delayMs: 20_000 }] });
    const id = (await launch(ec2, 'us-east-1a')).Instances?.[0]?.InstanceId ?? '';
    clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.pendingMs);
    const describe = async () =>
      (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations?.[0]?.Instances?.[0];
    const early = await describe();
    expect(early?.State?.Name).toBe('running');
    expect(early?.PublicIpAddress).toBeUndefined();
    clock.advance(20_000);
    expect((await describe())?.PublicIpAddress).toMatch(/^203\.0\.113\./);
  });
});

describe('AnswerHeld', () => {
  it('runs the action and holds its answer: a retry with the same ClientToken gets the same instance', async () => {
    const { ec2 } = await start({ faults: [{ code: 'AnswerHeld', action: 'RunInstances', count: 1 }] });
    const first = launch(ec2, 'us-east-1a', { ClientToken: 'held-launch' });
    for (let poll = 0; poll < 2_000 && emulator?.heldAnswers().length === 0; poll++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(emulator?.heldAnswers()).toEqual([
      { action: 'RunInstances', region: 'us-east-1', clientToken: 'held-launch' },
    ]);
    const launched = emulator?.state().instances.map((each) => each.id) ?? [];
    expect(launched).toHaveLength(1);

    // The fault fired once: the retry is answered at once, with the machine the held launch made.
    const retry = await launch(ec2, 'us-east-1a', { ClientToken: 'held-launch' });
    expect(retry.Instances?.map((each) => each.InstanceId)).toEqual(launched);
    expect(emulator?.launchedMachineCount()).toBe(1);

    emulator?.releaseHeldAnswers();
    expect((await first).Instances?.map((each) => each.InstanceId)).toEqual(launched);
    expect(emulator?.heldAnswers()).toEqual([]);
  });

  it('holds no answer of an action that failed, nor of other actions', async () => {
    const { ec2 } = await start({ faults: [{ code: 'AnswerHeld', action: 'RunInstances' }] });
    await expect(ec2.send(new DescribeRegionsCommand({}))).resolves.toBeDefined();
    await expect(
      launch(ec2, 'us-east-1a', { InstanceType: 'g99.huge' as 'g5.xlarge' }),
    ).rejects.toMatchObject({
      name: 'InvalidParameterValue',
    });
    expect(emulator?.heldAnswers()).toEqual([]);
  });
});

describe('the fault controls', () => {
  it('adds, lists and removes faults over HTTP, rejecting bad ones by field', async () => {
    const { ec2 } = await start();
    const url = emulator?.url ?? '';
    const added = await fetch(`${url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'InsufficientInstanceCapacity', instanceType: 'g5.xlarge' }),
    });
    expect(added.status).toBe(201);
    const { id } = (await added.json()) as { id: string };
    await expect(launch(ec2, 'us-east-1a')).rejects.toMatchObject({ name: 'InsufficientInstanceCapacity' });
    const listed = (await (await fetch(`${url}/_emulator/faults`)).json()) as {
      faults: { id: string; fired: number }[];
    };
    expect(listed.faults).toEqual([expect.objectContaining({ id, fired: 3 })]);
    expect((await fetch(`${url}/_emulator/faults/${id}`, { method: 'DELETE' })).status).toBe(200);
    await expect(launch(ec2, 'us-east-1a')).resolves.toBeDefined();

    const bad = await fetch(`${url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'InsufficientInstanceCapacity', market: 'reserved' }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: expect.stringContaining('market') });
  });

  it('parses CODE[:INSTANCE_TYPE] flags', () => {
    expect(parseAwsFaultFlag('InsufficientInstanceCapacity:g5.xlarge')).toEqual({
      code: 'InsufficientInstanceCapacity',
      instanceType: 'g5.xlarge',
    });
    expect(parseAwsFaultFlag('RequestLimitExceeded')).toEqual({ code: 'RequestLimitExceeded', everyNth: 2 });
    expect(() => parseAwsFaultFlag('NoSuchFault')).toThrow(/unknown code NoSuchFault/);
    expect(() => parseAwsFaultFlag('A:b:c')).toThrow(/CODE\[:INSTANCE_TYPE\]/);
    expect(() => parseAwsFault({ code: 'SlowPublicIp', delayMs: -1 })).toThrow(/delayMs/);
  });
});
