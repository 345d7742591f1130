import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  paginateDescribeInstances,
  RunInstancesCommand,
  type RunInstancesCommandInput,
  TerminateInstancesCommand,
  waitUntilInstanceRunning,
} from '@aws-sdk/client-ec2';
import { afterEach, describe, expect, it } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from './aws-emulator.js';
import {
  type ManualClock,
  RecordingHosts,
  sdkClients,
  settle,
  startTestEmulator,
  TEST_TIMELINE,
} from './aws-emulator.test.helpers.js';

let emulator: AwsEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof startTestEmulator>[0] = {}) {
  const started = await startTestEmulator(options);
  emulator = started.emulator;
  return { ...started, ec2: sdkClients(started.emulator).ec2 };
}

/** What a backend needs to launch in us-east-1: the DLAMI and the default subnet of each zone. */
async function launchBasics(ec2: EC2Client) {
  const images = await ec2.send(
    new DescribeImagesCommand({
      Owners: ['898082745236'],
      Filters: [{ Name: 'name', Values: ['Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *'] }],
    }),
  );
  const imageId = images.Images?.[0]?.ImageId;
  const subnets = await ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'default-for-az', Values: ['true'] }] }),
  );
  const subnetByZone = new Map(
    (subnets.Subnets ?? []).map((subnet) => [subnet.AvailabilityZone, subnet.SubnetId]),
  );
  if (!imageId) throw new Error('no DLAMI');
  return { imageId, subnetByZone };
}

function launchInput(
  imageId: string,
  overrides: Partial<RunInstancesCommandInput> = {},
): RunInstancesCommandInput {
  return {
    ImageId: imageId,
    InstanceType: 'g5.xlarge',
    MinCount: 1,
    MaxCount: 1,
    UserData: Buffer.from('#cloud-config\nruncmd: [echo hi]\n').toString('base64'),
    TagSpecifications: [
      {
        ResourceType: 'instance',
        Tags: [
          { Key: 'Name', Value: 'dstack-main-run-1' },
          { Key: 'owner', Value: 'dstack' },
          { Key: 'dstack_project', Value: 'main' },
        ],
      },
    ],
    BlockDeviceMappings: [{ DeviceName: '/dev/sda1', Ebs: { VolumeSize: 100, VolumeType: 'gp2' } }],
    ...overrides,
  };
}

async function describeOne(ec2: EC2Client, instanceId: string) {
  const answer = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  const instance = answer.Reservations?.[0]?.Instances?.[0];
  if (!instance) throw new Error(`${instanceId} missing from DescribeInstances`);
  return instance;
}

async function describeError(ec2: EC2Client, instanceId: string): Promise<string | undefined> {
  try {
    await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    return undefined;
  } catch (error) {
    return (error as Error).name;
  }
}

describe('RunInstances', () => {
  it('answers the same reservation for the same ClientToken, and a new one for another token', async () => {
    const { ec2 } = await start();
    const { imageId } = await launchBasics(ec2);
    const first = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { ClientToken: 'instance-1' })),
    );
    const again = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { ClientToken: 'instance-1' })),
    );
    const other = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { ClientToken: 'instance-2' })),
    );

    expect(again.ReservationId).toBe(first.ReservationId);
    expect(again.Instances?.map((each) => each.InstanceId)).toEqual(
      first.Instances?.map((each) => each.InstanceId),
    );
    expect(other.ReservationId).not.toBe(first.ReservationId);
    expect(emulator?.state().instances).toHaveLength(2);
  });

  it('keeps one instance when the SDK retries a RunInstances whose answer was a 500', async () => {
    const { ec2 } = await start();
    const { imageId } = await launchBasics(ec2);
    emulator?.addFault({ code: 'InternalError', action: 'RunInstances', afterAction: true, count: 1 });

    // The SDK fills ClientToken itself and resends the same body after the 500.
    const answer = await ec2.send(new RunInstancesCommand(launchInput(imageId)));

    const attempts = emulator?.server.requestsTo('ec2').filter((each) => {
      return (each.body as Record<string, string>).Action === 'RunInstances';
    });
    expect(attempts?.map((each) => each.status)).toEqual([500, 200]);
    const tokens = attempts?.map((each) => (each.body as Record<string, string>).ClientToken);
    expect(tokens?.[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens?.[1]).toBe(tokens?.[0]);
    expect(emulator?.state().instances.map((each) => each.id)).toEqual([answer.Instances?.[0]?.InstanceId]);
  });

  it('rejects a ClientToken reused with other parameters', async () => {
    const { ec2 } = await start();
    const { imageId } = await launchBasics(ec2);
    await ec2.send(new RunInstancesCommand(launchInput(imageId, { ClientToken: 'token' })));
    await expect(
      ec2.send(
        new RunInstancesCommand(launchInput(imageId, { ClientToken: 'token', InstanceType: 'g5.2xlarge' })),
      ),
    ).rejects.toMatchObject({ name: 'IdempotentParameterMismatch' });
  });

  it('launches into the subnet, security group and market asked for, with tags, disk and decoded user data', async () => {
    const hosts = new RecordingHosts();
    const { ec2 } = await start({ hosts });
    const { imageId, subnetByZone } = await launchBasics(ec2);
    const subnetId = subnetByZone.get('us-east-1b');
    const answer = await ec2.send(
      new RunInstancesCommand(
        launchInput(imageId, {
          NetworkInterfaces: [{ DeviceIndex: 0, SubnetId: subnetId, AssociatePublicIpAddress: true }],
          InstanceMarketOptions: {
            MarketType: 'spot',
            SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' },
          },
        }),
      ),
    );
    const launched = answer.Instances?.[0];
    expect(launched?.State).toEqual({ Code: 0, Name: 'pending' });
    expect(launched?.Placement?.AvailabilityZone).toBe('us-east-1b');
    expect(launched?.SubnetId).toBe(subnetId);
    expect(launched?.InstanceLifecycle).toBe('spot');
    expect(launched?.SpotInstanceRequestId).toMatch(/^sir-/);
    expect(launched?.Tags).toEqual(
      expect.arrayContaining([
        { Key: 'owner', Value: 'dstack' },
        { Key: 'dstack_project', Value: 'main' },
      ]),
    );
    expect(launched?.BlockDeviceMappings?.[0]?.DeviceName).toBe('/dev/sda1');
    expect(launched?.SecurityGroups?.[0]?.GroupName).toBe('default');
    expect(hosts.launches).toEqual([
      // dstack's and Amazon's images have Docker; the host is booted from the image with it.
      { instanceId: launched?.InstanceId, userData: '#cloud-config\nruncmd: [echo hi]\n', kind: 'docker' },
    ]);
    expect(emulator?.state().instances).toEqual([
      {
        id: launched?.InstanceId,
        type: 'g5.xlarge',
        zone: 'us-east-1b',
        market: 'spot',
        state: 'pending',
        capacityReservationId: null,
      },
    ]);
  });

  it('launches MaxCount instances in one reservation', async () => {
    const { ec2 } = await start();
    const { imageId } = await launchBasics(ec2);
    const answer = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { MinCount: 1, MaxCount: 3 })),
    );
    expect(answer.Instances).toHaveLength(3);
    expect(answer.Instances?.map((each) => each.AmiLaunchIndex)).toEqual([0, 1, 2]);
  });

  it('answers clear errors for bad parameters', async () => {
    const { ec2 } = await start();
    const { imageId } = await launchBasics(ec2);
    await expect(
      ec2.send(new RunInstancesCommand(launchInput(imageId, { InstanceType: 'g99.huge' as 'g5.xlarge' }))),
    ).rejects.toMatchObject({
      name: 'InvalidParameterValue',
      message: "Invalid value 'g99.huge' for InstanceType.",
    });
    await expect(
      ec2.send(new RunInstancesCommand(launchInput('ami-0000000000000000a'))),
    ).rejects.toMatchObject({
      name: 'InvalidAMIID.NotFound',
    });
    await expect(
      ec2.send(new RunInstancesCommand(launchInput(imageId, { KeyName: 'nope' }))),
    ).rejects.toMatchObject({
      name: 'InvalidKeyPair.NotFound',
    });
    await expect(
      ec2.send(new RunInstancesCommand(launchInput(imageId, { SecurityGroupIds: ['sg-0123456789abcdef0'] }))),
    ).rejects.toMatchObject({
      name: 'InvalidGroup.NotFound',
    });
    await expect(
      ec2.send(new RunInstancesCommand(launchInput(imageId, { UserData: 'not base64!' }))),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
  });
});

describe('the instance timeline', () => {
  async function launched(clockAndEc2: { ec2: EC2Client; clock: ManualClock }) {
    const { imageId } = await launchBasics(clockAndEc2.ec2);
    const answer = await clockAndEc2.ec2.send(new RunInstancesCommand(launchInput(imageId)));
    const id = answer.Instances?.[0]?.InstanceId;
    if (!id) throw new Error('no instance id');
    return id;
  }

  it('answers NotFound for a just-launched id, then pending, running with an IP, shutting-down, terminated, NotFound', async () => {
    const started = await start();
    const { ec2, clock } = started;
    const id = await launched(started);

    expect(await describeError(ec2, id)).toBe('InvalidInstanceID.NotFound');
    const listed = await ec2.send(new DescribeInstancesCommand({}));
    expect(listed.Reservations ?? []).toEqual([]);

    clock.advance(TEST_TIMELINE.notFoundWindowMs);
    const pending = await describeOne(ec2, id);
    expect(pending.State).toEqual({ Code: 0, Name: 'pending' });
    expect(pending.PublicIpAddress).toBeUndefined();
    expect(pending.PrivateIpAddress).toMatch(/^172\.31\./);

    clock.advance(TEST_TIMELINE.pendingMs);
    const running = await describeOne(ec2, id);
    expect(running.State).toEqual({ Code: 16, Name: 'running' });
    expect(running.PublicIpAddress).toMatch(/^203\.0\.113\./);

    const terminate = await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    expect(terminate.TerminatingInstances?.[0]).toMatchObject({
      InstanceId: id,
      PreviousState: { Code: 16, Name: 'running' },
      CurrentState: { Code: 32, Name: 'shutting-down' },
    });
    const shuttingDown = await describeOne(ec2, id);
    expect(shuttingDown.State?.Name).toBe('shutting-down');
    expect(shuttingDown.PublicIpAddress).toBeUndefined();
    expect(shuttingDown.StateReason?.Code).toBe('Client.UserInitiatedShutdown');

    clock.advance(TEST_TIMELINE.shuttingDownMs);
    expect((await describeOne(ec2, id)).State).toEqual({ Code: 48, Name: 'terminated' });
    const again = await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    expect(again.TerminatingInstances?.[0]).toMatchObject({
      PreviousState: { Code: 48, Name: 'terminated' },
      CurrentState: { Code: 48, Name: 'terminated' },
    });

    clock.advance(TEST_TIMELINE.terminatedVisibleMs);
    expect(await describeError(ec2, id)).toBe('InvalidInstanceID.NotFound');
    await expect(ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }))).rejects.toMatchObject({
      name: 'InvalidInstanceID.NotFound',
    });
    expect(emulator?.state().instances[0]?.state).toBe('terminated');
  });

  it('terminates an instance still in its NotFound window', async () => {
    const started = await start();
    const id = await launched(started);
    const answer = await started.ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    expect(answer.TerminatingInstances?.[0]?.CurrentState?.Name).toBe('shutting-down');
  });

  it('rejects unknown and malformed ids', async () => {
    const { ec2 } = await start();
    await expect(
      ec2.send(new TerminateInstancesCommand({ InstanceIds: ['i-0123456789abcdef0'] })),
    ).rejects.toMatchObject({
      name: 'InvalidInstanceID.NotFound',
      message: "The instance ID 'i-0123456789abcdef0' does not exist",
    });
    expect(await describeError(ec2, 'nonsense')).toBe('InvalidInstanceID.Malformed');
  });

  it('with hosts: pending until the host is up, then its address; terminate stops the host', async () => {
    const hosts = new RecordingHosts('manual');
    const started = await start({ hosts });
    const { ec2, clock } = started;
    const id = await launched(started);
    clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.pendingMs);

    const booting = await describeOne(ec2, id);
    expect(booting.State?.Name).toBe('pending');
    expect(booting.PrivateIpAddress).toBeUndefined();

    await hosts.finishLaunch(id);
    const running = await describeOne(ec2, id);
    expect(running.State?.Name).toBe('running');
    expect(running.PublicIpAddress).toBe('127.0.10.1');
    expect(running.PrivateIpAddress).toBe('127.0.10.1');

    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    await settle();
    expect(hosts.terminated).toEqual([id]);
  });

  it('with hosts: a host that fails to boot ends the instance terminated', async () => {
    const hosts = new RecordingHosts('manual');
    const errors: unknown[] = [];
    const started = await start({ hosts, onHostError: (_id, error) => errors.push(error) });
    const id = await launched(started);
    await hosts.finishLaunch(id, new Error('sshd never came up'));
    started.clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.shuttingDownMs);

    const instance = await describeOne(started.ec2, id);
    expect(instance.State?.Name).toBe('terminated');
    expect(instance.StateReason?.Code).toBe('Server.InternalError');
    expect(errors).toHaveLength(1);
    await settle();
    expect(hosts.terminated).toEqual([id]);
  });

  it('with hosts: terminating while the host boots stops the host once its launch is over', async () => {
    const hosts = new RecordingHosts('manual');
    const started = await start({ hosts });
    const { ec2, clock } = started;
    const id = await launched(started);
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    await settle();
    // A terminate now could miss the host still being made, which would then be left behind.
    expect(hosts.terminated).toEqual([]);

    await hosts.finishLaunch(id);
    expect(hosts.terminated).toEqual([id]);
    clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.shuttingDownMs);
    expect((await describeOne(ec2, id)).State?.Name).toBe('terminated');
  });
});

describe('the SDK waiter', () => {
  it('waitUntilInstanceRunning rides out the NotFound window and pending on the real clock', async () => {
    emulator = await startAwsEmulator({ timeline: { notFoundWindowMs: 1500, pendingMs: 2000 } });
    const { ec2 } = sdkClients(emulator);
    const { imageId } = await launchBasics(ec2);
    const id =
      (await ec2.send(new RunInstancesCommand(launchInput(imageId)))).Instances?.[0]?.InstanceId ?? '';
    const result = await waitUntilInstanceRunning(
      { client: ec2, minDelay: 1, maxDelay: 1, maxWaitTime: 60 },
      { InstanceIds: [id] },
    );
    expect(result.state).toBe('SUCCESS');
    const describes = emulator.server.requestsTo('ec2').filter((each) => {
      return (each.body as Record<string, string>).Action === 'DescribeInstances';
    });
    expect(describes[0]?.status).toBe(400);
    expect(describes.at(-1)?.status).toBe(200);
  });
});

describe('DescribeInstances', () => {
  it('filters by id, tag and state, and pages with NextToken/MaxResults', async () => {
    const { ec2, clock } = await start();
    const { imageId } = await launchBasics(ec2);
    const ids: string[] = [];
    for (let index = 0; index < 7; index += 1) {
      const answer = await ec2.send(
        new RunInstancesCommand(
          launchInput(imageId, {
            TagSpecifications: [
              {
                ResourceType: 'instance',
                Tags: [{ Key: 'dstack_name', Value: index % 2 === 0 ? 'even' : 'odd' }],
              },
            ],
          }),
        ),
      );
      ids.push(answer.Instances?.[0]?.InstanceId ?? '');
    }
    clock.advance(TEST_TIMELINE.notFoundWindowMs);
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [ids[0] ?? ''] }));

    const byTag = await ec2.send(
      new DescribeInstancesCommand({ Filters: [{ Name: 'tag:dstack_name', Values: ['odd'] }] }),
    );
    expect(
      byTag.Reservations?.flatMap((each) => each.Instances?.map((instance) => instance.InstanceId)),
    ).toEqual([ids[1], ids[3], ids[5]]);
    const byState = await ec2.send(
      new DescribeInstancesCommand({ Filters: [{ Name: 'instance-state-name', Values: ['shutting-down'] }] }),
    );
    expect(byState.Reservations?.map((each) => each.Instances?.[0]?.InstanceId)).toEqual([ids[0]]);
    const byId = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: 'instance-id', Values: [ids[2] ?? '', ids[4] ?? ''] }],
      }),
    );
    expect(byId.Reservations).toHaveLength(2);

    const pages: number[] = [];
    const seen: string[] = [];
    for await (const page of paginateDescribeInstances({ client: ec2, pageSize: 5 }, {})) {
      pages.push(page.Reservations?.length ?? 0);
      seen.push(
        ...(page.Reservations ?? []).flatMap((each) => each.Instances?.map((i) => i.InstanceId ?? '') ?? []),
      );
    }
    expect(pages).toEqual([5, 2]);
    expect(seen).toEqual(ids);

    await expect(
      ec2.send(new DescribeInstancesCommand({ Filters: [{ Name: 'no-such-filter', Values: ['x'] }] })),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
  });
});

describe('spot interruption', () => {
  async function runningSpot(options: Parameters<typeof start>[0] = {}) {
    const started = await start(options);
    const { imageId } = await launchBasics(started.ec2);
    const answer = await started.ec2.send(
      new RunInstancesCommand(launchInput(imageId, { InstanceMarketOptions: { MarketType: 'spot' } })),
    );
    const id = answer.Instances?.[0]?.InstanceId ?? '';
    started.clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.pendingMs);
    await settle();
    expect((await describeOne(started.ec2, id)).State?.Name).toBe('running');
    return { ...started, id };
  }

  it('ends a running spot instance terminated with Server.SpotInstanceTermination and stops its host', async () => {
    const hosts = new RecordingHosts();
    const { ec2, clock, id } = await runningSpot({ hosts });
    emulator?.interruptSpotInstance(id);
    await settle();
    expect(hosts.terminated).toEqual([id]);
    clock.advance(TEST_TIMELINE.shuttingDownMs);
    const instance = await describeOne(ec2, id);
    expect(instance.State?.Name).toBe('terminated');
    expect(instance.StateReason).toEqual({
      Code: 'Server.SpotInstanceTermination',
      Message: 'Server.SpotInstanceTermination: Spot instance termination',
    });
  });

  it('is also available over HTTP, and refuses on-demand instances', async () => {
    const { id, clock, ec2 } = await runningSpot();
    const url = emulator?.url ?? '';
    const answer = await fetch(`${url}/_emulator/instances/${id}/interrupt`, { method: 'POST' });
    expect(answer.status).toBe(200);
    clock.advance(TEST_TIMELINE.shuttingDownMs);
    expect((await describeOne(ec2, id)).State?.Name).toBe('terminated');

    const { imageId } = await launchBasics(ec2);
    const onDemand = await ec2.send(new RunInstancesCommand(launchInput(imageId)));
    const refused = await fetch(
      `${url}/_emulator/instances/${onDemand.Instances?.[0]?.InstanceId}/interrupt`,
      {
        method: 'POST',
      },
    );
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: expect.stringContaining('not a spot instance') });
  });

  it('happens on its own with a SpotInterruption fault, after the instance ran for afterRunningMs', async () => {
    const { ec2, clock, id } = await runningSpot({
      faults: [{ code: 'SpotInterruption', instanceType: 'g5.xlarge', afterRunningMs: 30_000 }],
    });
    expect((await describeOne(ec2, id)).State?.Name).toBe('running');
    clock.advance(30_000);
    const instance = await describeOne(ec2, id);
    expect(instance.State?.Name).toBe('shutting-down');
    expect(instance.StateReason?.Code).toBe('Server.SpotInstanceTermination');
  });

  it('with hosts, a SpotInterruption fault counts afterRunningMs from when the host came up', async () => {
    const hosts = new RecordingHosts('manual');
    const started = await start({
      hosts,
      faults: [{ code: 'SpotInterruption', instanceType: 'g5.xlarge', afterRunningMs: 30_000 }],
    });
    const { ec2, clock } = started;
    const { imageId } = await launchBasics(ec2);
    const answer = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { InstanceMarketOptions: { MarketType: 'spot' } })),
    );
    const id = answer.Instances?.[0]?.InstanceId ?? '';
    clock.advance(TEST_TIMELINE.notFoundWindowMs + TEST_TIMELINE.pendingMs + 60_000);
    expect((await describeOne(ec2, id)).State?.Name).toBe('pending');

    await hosts.finishLaunch(id);
    clock.advance(29_999);
    expect((await describeOne(ec2, id)).State?.Name).toBe('running');
    clock.advance(1);
    expect((await describeOne(ec2, id)).State?.Name).toBe('shutting-down');
    await settle();
    expect(hosts.terminated).toEqual([id]);
  });
});

describe('GET /_emulator/state', () => {
  it('lists every instance with id, type, zone, market, EC2 state and capacity reservation', async () => {
    const { ec2, clock } = await start();
    const { imageId } = await launchBasics(ec2);
    const answer = await ec2.send(
      new RunInstancesCommand(launchInput(imageId, { InstanceType: 'c5.xlarge' })),
    );
    clock.advance(TEST_TIMELINE.pendingMs);
    const response = await fetch(`${emulator?.url}/_emulator/state`);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({
      instances: [
        {
          id: answer.Instances?.[0]?.InstanceId,
          type: 'c5.xlarge',
          zone: 'us-east-1a',
          market: 'on-demand',
          state: 'running',
          capacityReservationId: null,
        },
      ],
      volumes: [],
      placementGroups: [],
      capacityReservations: [],
      loopDevices: [],
    });
  });
});
