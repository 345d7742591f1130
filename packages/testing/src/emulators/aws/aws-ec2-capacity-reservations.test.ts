import {
  DescribeCapacityReservationsCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  RunInstancesCommand,
  type RunInstancesCommandInput,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterEach, describe, expect, it } from 'vitest';
import type { CapacityReservationSpec } from './aws-ec2-capacity-reservations.js';
import type { AwsEmulator, AwsEmulatorCapacityReservationState } from './aws-emulator.js';
import {
  type ManualClock,
  sdkClients,
  startTestEmulator,
  TEST_TIMELINE,
} from './aws-emulator.test.helpers.js';

let emulator: AwsEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

interface Started {
  aws: AwsEmulator;
  clock: ManualClock;
  ec2: EC2Client;
  imageId: string;
  subnetByZone: Map<string, string>;
}

async function start(): Promise<Started> {
  const started = await startTestEmulator();
  emulator = started.emulator;
  const { ec2 } = sdkClients(started.emulator);
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['898082745236'] }));
  const imageId = images.Images?.[0]?.ImageId;
  if (!imageId) throw new Error('no DLAMI');
  const subnets = await ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'default-for-az', Values: ['true'] }] }),
  );
  const subnetByZone = new Map(
    (subnets.Subnets ?? []).map((subnet) => [subnet.AvailabilityZone ?? '', subnet.SubnetId ?? '']),
  );
  return { aws: started.emulator, clock: started.clock, ec2, imageId, subnetByZone };
}

/** A launch of `type` in `zone`'s default subnet, as dstack's backend sends it, plus `extra`. */
function launch(
  started: Started,
  type: string,
  zone: string,
  extra: Partial<RunInstancesCommandInput> = {},
): RunInstancesCommandInput {
  return {
    ImageId: started.imageId,
    InstanceType: type as RunInstancesCommandInput['InstanceType'],
    MinCount: 1,
    MaxCount: 1,
    NetworkInterfaces: [{ DeviceIndex: 0, SubnetId: started.subnetByZone.get(zone) }],
    ...extra,
  };
}

/** A launch targeting `reservation`, of its type in its zone, plus `extra`. */
function launchInto(
  started: Started,
  reservation: AwsEmulatorCapacityReservationState,
  extra: Partial<RunInstancesCommandInput> = {},
): RunInstancesCommandInput {
  return launch(started, reservation.instanceType, reservation.zone, { ...target(reservation.id), ...extra });
}

function target(id: string): Partial<RunInstancesCommandInput> {
  return { CapacityReservationSpecification: { CapacityReservationTarget: { CapacityReservationId: id } } };
}

/** A reservation as the account would have made it: one g5.xlarge (the type most cases launch) in `zone`, unless `overrides` say otherwise. */
function reserve(
  aws: AwsEmulator,
  availabilityZone: string,
  overrides: Partial<CapacityReservationSpec> = {},
): AwsEmulatorCapacityReservationState {
  return aws.addCapacityReservation({
    instanceType: 'g5.xlarge',
    availabilityZone,
    instanceCount: 1,
    ...overrides,
  });
}

async function describeReservation(ec2: EC2Client, id: string) {
  const answer = await ec2.send(new DescribeCapacityReservationsCommand({ CapacityReservationIds: [id] }));
  return answer.CapacityReservations?.[0];
}

describe('DescribeCapacityReservations', () => {
  it("lists the region's reservations with EC2's members, by id and by filter", async () => {
    const started = await start();
    const { aws, ec2 } = started;
    const reservation = reserve(aws, 'us-east-1b', { instanceCount: 2, tags: { team: 'ml' } });
    const block = reserve(aws, 'us-east-1d', {
      instanceType: 'g4dn.xlarge',
      reservationType: 'capacity-block',
      state: 'scheduled',
    });
    reserve(aws, 'us-west-2a');
    expect(reservation.id).toMatch(/^cr-[0-9a-f]{17}$/);

    expect(await describeReservation(ec2, reservation.id)).toMatchObject({
      CapacityReservationId: reservation.id,
      OwnerId: aws.accountId,
      CapacityReservationArn: `arn:aws:ec2:us-east-1:${aws.accountId}:capacity-reservation/${reservation.id}`,
      InstanceType: 'g5.xlarge',
      InstancePlatform: 'Linux/UNIX',
      AvailabilityZone: 'us-east-1b',
      Tenancy: 'default',
      TotalInstanceCount: 2,
      AvailableInstanceCount: 2,
      State: 'active',
      EndDateType: 'unlimited',
      InstanceMatchCriteria: 'open',
      ReservationType: 'default',
      Tags: [{ Key: 'team', Value: 'ml' }],
    });
    expect(await describeReservation(ec2, block.id)).toMatchObject({
      ReservationType: 'capacity-block',
      State: 'scheduled',
      AvailableInstanceCount: 0,
      EndDateType: 'limited',
      InstanceMatchCriteria: 'targeted',
    });

    const all = await ec2.send(new DescribeCapacityReservationsCommand({}));
    expect(all.CapacityReservations?.map((each) => each.CapacityReservationId).sort()).toEqual(
      [reservation.id, block.id].sort(),
    );
    // dstack's look-up: the id with `state=active` (a block not yet started is left out).
    for (const [id, expected] of [
      [reservation.id, [reservation.id]],
      [block.id, []],
    ] as const) {
      const active = await ec2.send(
        new DescribeCapacityReservationsCommand({
          CapacityReservationIds: [id],
          Filters: [{ Name: 'state', Values: ['active'] }],
        }),
      );
      expect(active.CapacityReservations?.map((each) => each.CapacityReservationId) ?? []).toEqual(expected);
    }
    const byType = await ec2.send(
      new DescribeCapacityReservationsCommand({
        Filters: [
          { Name: 'instance-type', Values: ['g4dn.*'] },
          { Name: 'availability-zone', Values: ['us-east-1d'] },
        ],
      }),
    );
    expect(byType.CapacityReservations?.map((each) => each.CapacityReservationId)).toEqual([block.id]);

    const firstPage = await ec2.send(new DescribeCapacityReservationsCommand({ MaxResults: 1 }));
    expect(firstPage.CapacityReservations).toHaveLength(1);
    const secondPage = await ec2.send(
      new DescribeCapacityReservationsCommand({ MaxResults: 1, NextToken: firstPage.NextToken }),
    );
    expect(secondPage.CapacityReservations?.[0]?.CapacityReservationId).not.toBe(
      firstPage.CapacityReservations?.[0]?.CapacityReservationId,
    );
    expect(secondPage.NextToken).toBeUndefined();
  });

  it("answers NotFound for an unknown id or another region's, Malformed for a bad one, and refuses an unknown filter", async () => {
    const { aws, ec2 } = await start();
    reserve(aws, 'us-east-1a');
    const elsewhere = reserve(aws, 'us-west-2a');
    for (const id of ['cr-0123456789abcdef0', elsewhere.id]) {
      await expect(
        ec2.send(new DescribeCapacityReservationsCommand({ CapacityReservationIds: [id] })),
      ).rejects.toMatchObject({ name: 'InvalidCapacityReservationId.NotFound' });
    }
    await expect(
      ec2.send(new DescribeCapacityReservationsCommand({ CapacityReservationIds: ['my-reservation'] })),
    ).rejects.toMatchObject({ name: 'InvalidCapacityReservationId.Malformed' });
    await expect(
      ec2.send(new DescribeCapacityReservationsCommand({ Filters: [{ Name: 'colour', Values: ['red'] }] })),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
  });
});

describe('RunInstances into a capacity reservation', () => {
  it('launches into the targeted reservation, takes its room and gives it back once terminated', async () => {
    const started = await start();
    const { aws, ec2, clock } = started;
    const reservation = reserve(aws, 'us-east-1b', { instanceCount: 2, instanceMatchCriteria: 'targeted' });
    const answer = await ec2.send(new RunInstancesCommand(launchInto(started, reservation)));
    const instance = answer.Instances?.[0];
    expect(instance).toMatchObject({
      CapacityReservationId: reservation.id,
      CapacityReservationSpecification: {
        CapacityReservationTarget: { CapacityReservationId: reservation.id },
      },
      Placement: { AvailabilityZone: 'us-east-1b', Tenancy: 'default' },
    });
    expect(instance?.InstanceLifecycle).toBeUndefined();
    expect((await describeReservation(ec2, reservation.id))?.AvailableInstanceCount).toBe(1);
    clock.advance(TEST_TIMELINE.notFoundWindowMs);
    const described = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: 'capacity-reservation-id', Values: [reservation.id] }],
      }),
    );
    expect(
      described.Reservations?.flatMap((each) => each.Instances ?? []).map((each) => each.InstanceId),
    ).toEqual([instance?.InstanceId]);

    // MaxCount above what is left: EC2 launches what fits, MinCount permitting.
    const rest = await ec2.send(new RunInstancesCommand(launchInto(started, reservation, { MaxCount: 5 })));
    expect(rest.Instances).toHaveLength(1);
    expect(aws.state().capacityReservations[0]).toMatchObject({ availableInstanceCount: 0 });
    await expect(ec2.send(new RunInstancesCommand(launchInto(started, reservation)))).rejects.toMatchObject({
      name: 'ReservationCapacityExceeded',
    });

    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instance?.InstanceId ?? ''] }));
    expect((await describeReservation(ec2, reservation.id))?.AvailableInstanceCount).toBe(1);
  });

  it('refuses a wrong type, zone or tenancy, a reservation that is not active, spot, and unknown or malformed ids, with EC2 codes', async () => {
    const started = await start();
    const { aws, ec2 } = started;
    const reservation = reserve(aws, 'us-east-1b');
    const refusals: Array<[RunInstancesCommandInput, string]> = [
      [launch(started, 'g4dn.xlarge', 'us-east-1b', target(reservation.id)), 'ReservationCapacityExceeded'],
      [launch(started, 'g5.xlarge', 'us-east-1a', target(reservation.id)), 'ReservationCapacityExceeded'],
      [
        launchInto(started, reservation, {
          Placement: { Tenancy: 'dedicated' },
        }),
        'ReservationCapacityExceeded',
      ],
      [
        launchInto(started, reservation, {
          InstanceMarketOptions: { MarketType: 'spot' },
        }),
        'InvalidParameterValue',
      ],
      [
        launch(started, 'g5.xlarge', 'us-east-1b', {
          CapacityReservationSpecification: {
            CapacityReservationPreference: 'open',
            CapacityReservationTarget: { CapacityReservationId: reservation.id },
          },
        }),
        'InvalidParameterCombination',
      ],
      [
        launch(started, 'g5.xlarge', 'us-east-1b', target('cr-0000000000000000f')),
        'InvalidCapacityReservationId.NotFound',
      ],
      [
        launch(started, 'g5.xlarge', 'us-east-1b', target('reservation-1')),
        'InvalidCapacityReservationId.Malformed',
      ],
    ];
    for (const [input, code] of refusals) {
      await expect(ec2.send(new RunInstancesCommand(input)), code).rejects.toMatchObject({ name: code });
    }
    aws.setCapacityReservationState(reservation.id, 'expired');
    await expect(ec2.send(new RunInstancesCommand(launchInto(started, reservation)))).rejects.toMatchObject({
      name: 'ReservationCapacityExceeded',
    });
    expect(aws.state().instances).toEqual([]);
  });

  it("launches in the reservation's zone when the request names no subnet, and whatever capacity faults the zone has", async () => {
    const started = await start();
    const { aws, ec2 } = started;
    const reservation = reserve(aws, 'us-east-1d');
    aws.addFault({ code: 'InsufficientInstanceCapacity', instanceType: 'g5.xlarge' });
    const answer = await ec2.send(
      new RunInstancesCommand({
        ImageId: started.imageId,
        InstanceType: 'g5.xlarge',
        MinCount: 1,
        MaxCount: 1,
        ...target(reservation.id),
      }),
    );
    expect(answer.Instances?.[0]?.Placement?.AvailabilityZone).toBe('us-east-1d');
    // Outside the reservation the zone still has no capacity.
    await expect(
      ec2.send(new RunInstancesCommand(launch(started, 'g5.xlarge', 'us-east-1d'))),
    ).rejects.toMatchObject({ name: 'InsufficientInstanceCapacity' });
  });

  it('takes an untargeted launch into an open reservation that fits, unless its preference is none', async () => {
    const started = await start();
    const { aws, ec2 } = started;
    const reservation = reserve(aws, 'us-east-1b');
    const avoided = await ec2.send(
      new RunInstancesCommand(
        launch(started, 'g5.xlarge', 'us-east-1b', {
          CapacityReservationSpecification: { CapacityReservationPreference: 'none' },
        }),
      ),
    );
    expect(avoided.Instances?.[0]?.CapacityReservationId).toBeUndefined();
    expect(avoided.Instances?.[0]?.CapacityReservationSpecification).toEqual({
      CapacityReservationPreference: 'none',
    });
    const open = await ec2.send(new RunInstancesCommand(launch(started, 'g5.xlarge', 'us-east-1b')));
    expect(open.Instances?.[0]).toMatchObject({
      CapacityReservationId: reservation.id,
      CapacityReservationSpecification: { CapacityReservationPreference: 'open' },
    });
    // Full now: the next one runs outside it.
    const outside = await ec2.send(new RunInstancesCommand(launch(started, 'g5.xlarge', 'us-east-1b')));
    expect(outside.Instances?.[0]?.CapacityReservationId).toBeUndefined();
  });

  it('launches into a Capacity Block only with the capacity-block market, and that market only into a block', async () => {
    const started = await start();
    const { aws, ec2 } = started;
    const block = reserve(aws, 'us-east-1b', { reservationType: 'capacity-block' });
    const reservation = reserve(aws, 'us-east-1b');
    const blockMarket = { InstanceMarketOptions: { MarketType: 'capacity-block' as const } };
    for (const input of [
      launchInto(started, block),
      launchInto(started, reservation, blockMarket),
      launch(started, 'g5.xlarge', 'us-east-1b', blockMarket),
    ]) {
      await expect(ec2.send(new RunInstancesCommand(input))).rejects.toMatchObject({
        name: 'InvalidParameterValue',
        message: expect.stringContaining('market type'),
      });
    }
    const answer = await ec2.send(new RunInstancesCommand(launchInto(started, block, blockMarket)));
    expect(answer.Instances?.[0]).toMatchObject({
      CapacityReservationId: block.id,
      InstanceLifecycle: 'capacity-block',
    });
  });
});

describe('control routes', () => {
  it('makes a reservation and moves its state over HTTP, refusing a bad spec naming the field', async () => {
    const { aws } = await start();
    const made = await fetch(`${aws.url}/_emulator/capacity-reservations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instanceType: 'g5.xlarge', availabilityZone: 'us-east-1b', instanceCount: 1 }),
    });
    expect(made.status).toBe(201);
    const reservation = (await made.json()) as { id: string; state: string };
    expect(reservation).toMatchObject({ state: 'active', availableInstanceCount: 1, region: 'us-east-1' });
    const moved = await fetch(`${aws.url}/_emulator/capacity-reservations/${reservation.id}/state`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ state: 'cancelled' }),
    });
    expect(await moved.json()).toMatchObject({
      id: reservation.id,
      state: 'cancelled',
      availableInstanceCount: 0,
    });
    const refused = await fetch(`${aws.url}/_emulator/capacity-reservations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instanceType: 'g5.xlarge', availabilityZone: 'mars-1a', instanceCount: 1 }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^availabilityZone:/);
  });
});
