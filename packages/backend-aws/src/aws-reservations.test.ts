/**
 * Capacity Reservations and Capacity Blocks on the EC2 emulator: offers of a run with
 * `reservation` are the reservation's type in its zone while it is usable, the reason when they
 * are none, and launches into it (as dstack's AWS backend does).
 */
import { randomUUID } from 'node:crypto';
import {
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  NoCapacityError,
  type Requirements,
  RequirementsSchema,
} from '@dstack/core';
import type { CapacityReservationSpec } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsCompute, createAwsBackend } from './aws-compute.js';
import { type AwsTestEmulator, emulatorConfig, startAwsTestEmulator } from './aws-emulator.test.helpers.js';

let emulator: AwsTestEmulator;
let compute: AwsCompute;

beforeAll(async () => {
  emulator = await startAwsTestEmulator();
  compute = createAwsBackend({
    config: { ...emulatorConfig(emulator.aws), regions: ['us-east-1', 'us-west-2'] },
  });
});
afterAll(async () => {
  compute?.close();
  await emulator?.close();
});

/** A g5.xlarge reservation in us-east-1b (unless told), active with two instances. */
function reserve(extra: Partial<CapacityReservationSpec> = {}): string {
  return emulator.aws.addCapacityReservation({
    instanceType: 'g5.xlarge',
    availabilityZone: 'us-east-1b',
    instanceCount: 2,
    ...extra,
  }).id;
}

/** One A10G (g5's GPU), on-demand or spot (`spot_policy: auto`), with `reservation`. */
function requirements(reservation: string): Requirements {
  return RequirementsSchema.parse({
    resources: {
      cpu: { count: { min: 1 } },
      memory: { min: null },
      gpu: { name: ['A10G'], count: { min: 1 } },
    },
    spot: null,
    reservation,
  });
}

function instanceConfig(reservation: string): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: 'reserved-0',
    instance_id: randomUUID(),
    agent_token: 'agent-token',
    user: 'admin',
    ssh_keys: [{ public: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO3x project' }],
    reservation,
  };
}

async function reservedOffer(reservation: string): Promise<InstanceOfferWithAvailability> {
  const [offer] = await compute.getOffers(requirements(reservation));
  if (!offer) throw new Error(`no offer for ${reservation}`);
  return offer;
}

describe('offers with a reservation', () => {
  it("are only on-demand offers of the reservation's type, in its region and zone", async () => {
    const reservation = reserve();
    const without = await compute.getOffers({ ...requirements(reservation), reservation: null });
    expect(new Set(without.map((offer) => offer.instance.name)).size).toBeGreaterThan(1);
    expect(without.some((offer) => offer.instance.resources.spot)).toBe(true);
    const offers = await compute.getOffers(requirements(reservation));
    expect(offers.length).toBeGreaterThan(0);
    for (const offer of offers) {
      expect(offer).toMatchObject({
        instance: { name: 'g5.xlarge', resources: { spot: false } },
        region: 'us-east-1',
        availability_zones: ['us-east-1b'],
      });
    }
    expect(await compute.reservationUnusableReason(reservation)).toBeNull();
  });

  it('are none for an unknown, malformed, inactive or full reservation, and the reason says why', async () => {
    for (const unknown of ['cr-0123456789abcdef0', 'my-reservation']) {
      expect(await compute.getOffers(requirements(unknown))).toEqual([]);
      expect(await compute.reservationUnusableReason(unknown)).toBe(
        `no capacity reservation or capacity block ${unknown} in us-east-1, us-west-2`,
      );
    }
    const expired = reserve({ state: 'expired' });
    expect(await compute.getOffers(requirements(expired))).toEqual([]);
    expect(await compute.reservationUnusableReason(expired)).toBe(
      `capacity reservation ${expired} in us-east-1b is expired, not active`,
    );
    const full = reserve({ instanceCount: 1 });
    await compute.createInstance(await reservedOffer(full), instanceConfig(full), null);
    const fresh = createAwsBackend({ config: compute.config });
    try {
      expect(await fresh.getOffers(requirements(full))).toEqual([]);
      expect(await fresh.reservationUnusableReason(full)).toBe(
        `capacity reservation ${full} in us-east-1b has no instance free (1 of 1 in use)`,
      );
    } finally {
      fresh.close();
    }
  });
});

describe('createInstance with a reservation', () => {
  it('launches into the capacity reservation and records it in the provisioning data', async () => {
    const reservation = reserve();
    const data = await compute.createInstance(
      await reservedOffer(reservation),
      instanceConfig(reservation),
      null,
    );
    expect(data).toMatchObject({ reservation, availability_zone: 'us-east-1b', region: 'us-east-1' });
    const state = emulator.aws.state();
    expect(state.instances.find((each) => each.id === data.instance_id)?.capacityReservationId).toBe(
      reservation,
    );
    expect(state.capacityReservations.find((each) => each.id === reservation)?.availableInstanceCount).toBe(
      1,
    );
  });

  it('launches into a Capacity Block with its market type, and into a dedicated reservation with its tenancy', async () => {
    // The emulator refuses a block without MarketType=capacity-block and a tenancy other than the reservation's.
    for (const extra of [{ reservationType: 'capacity-block' as const }, { tenancy: 'dedicated' as const }]) {
      const reservation = reserve(extra);
      const data = await compute.createInstance(
        await reservedOffer(reservation),
        instanceConfig(reservation),
        null,
      );
      expect(data.reservation).toBe(reservation);
    }
  });

  it('ends as no capacity, naming the reservation, when it filled up since the offers', async () => {
    const reservation = reserve({ instanceCount: 1 });
    const offer = await reservedOffer(reservation);
    await compute.createInstance(offer, instanceConfig(reservation), null);
    const error = await compute.createInstance(offer, instanceConfig(reservation), null).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(NoCapacityError.isInstance(error)).toBe(true);
    expect(String(error)).toContain(`${reservation} in us-east-1b has no instance free`);
  });
});
