/**
 * Zonal reservations on the GCP emulator, as dstack's GCP backend uses them: offers of a run with
 * `reservation` are those matching the reservation's machine in its zones, the reason when there
 * are none, and launches consume it through `reservationAffinity`.
 */
import { randomUUID } from 'node:crypto';
import {
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  NoCapacityError,
  type Requirements,
  RequirementsSchema,
} from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGcpBackend, type GcpCompute } from './gcp-compute.js';
import { gcpConfigModels } from './gcp-config.js';
import {
  emulatorConfig,
  FAST_OPERATIONS,
  type GcpTestEmulator,
  startGcpTestEmulator,
} from './gcp-emulator.test.helpers.js';

let emulator: GcpTestEmulator;
let compute: GcpCompute;
/** The cheapest on-demand T4 offer without a reservation: what the reservations hold. */
let plain: InstanceOfferWithAvailability;
let zone: string;

function makeCompute(): GcpCompute {
  return createGcpBackend({
    config: gcpConfigModels.config.parse(emulatorConfig(emulator.gcp, { regions: ['us-central1'] })),
    ...FAST_OPERATIONS,
  });
}

/** One T4, on-demand or spot (`spot_policy: auto`), with `reservation`. */
function t4(reservation: string | null): Requirements {
  return RequirementsSchema.parse({
    resources: {
      cpu: { count: { min: 1 } },
      memory: { min: null },
      gpu: { name: ['T4'], count: { min: 1, max: 1 } },
    },
    spot: null,
    reservation,
  });
}

beforeAll(async () => {
  emulator = await startGcpTestEmulator();
  compute = makeCompute();
  const offer = (await compute.getOffers(t4(null))).find(
    (each) => !each.instance.resources.spot && (each.availability_zones?.length ?? 0) > 1,
  );
  if (!offer) throw new Error('no on-demand T4 offer in several zones');
  plain = offer;
  zone = offer.availability_zones?.at(-1) as string;
});
afterAll(async () => {
  await emulator?.close();
});

function reserve(name: string, count = 1): void {
  emulator.gcp.addReservation({
    name,
    zone,
    machineType: plain.instance.name,
    count,
    guestAccelerator: { acceleratorType: 'nvidia-tesla-t4', acceleratorCount: 1 },
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

describe('gcp reservations', () => {
  it("offers only the reservation's machine, on-demand, in its zone", async () => {
    reserve('team-t4');
    const offers = await compute.getOffers(t4('team-t4'));
    expect(offers.length).toBeGreaterThan(0);
    for (const offer of offers) {
      expect(offer).toMatchObject({
        instance: { name: plain.instance.name, resources: { spot: false } },
        availability_zones: [zone],
        availability: 'available',
      });
    }
    // The full form names the project.
    expect(await compute.getOffers(t4(`projects/${emulator.gcp.project}/reservations/team-t4`))).toEqual(
      offers,
    );
    expect(await compute.reservationUnusableReason('team-t4')).toBeNull();
  });

  it('launches into the reservation, and a full one is no capacity and not available', async () => {
    reserve('one-t4');
    const [offer] = await compute.getOffers(t4('one-t4'));
    if (!offer) throw new Error('no offer for one-t4');
    const data = await compute.createInstance(offer, instanceConfig('one-t4'), null);
    expect(data.availability_zone).toBe(zone);
    expect(emulator.gcp.state().reservations.find((each) => each.name === 'one-t4')?.instances).toHaveLength(
      1,
    );

    const again = await compute.createInstance(offer, instanceConfig('one-t4'), null).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(NoCapacityError.isInstance(again)).toBe(true);
    expect(String(again)).toContain('reservation one-t4 is full');
    // The offers' look-up is kept 20 s: a backend that has not looked yet sees it full.
    const fresh = makeCompute();
    expect(await fresh.getOffers(t4('one-t4'))).toMatchObject([{ availability: 'not_available' }]);
    expect(await fresh.reservationUnusableReason('one-t4')).toBe(
      `reservation one-t4 in ${zone} has no instance free (1 of 1 in use)`,
    );
  });

  it('has no offers for an unknown reservation, and says why', async () => {
    expect(await compute.getOffers(t4('nowhere'))).toEqual([]);
    expect(await compute.reservationUnusableReason('nowhere')).toBe(
      `no READY reservation nowhere with specificReservationRequired in project ${emulator.gcp.project}`,
    );
    expect(await compute.getOffers(t4('Not A Name'))).toEqual([]);
  });
});
