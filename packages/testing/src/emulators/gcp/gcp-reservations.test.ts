import { afterEach, describe, expect, it } from 'vitest';
import type { GcpEmulator } from './gcp-emulator.js';
import { compute, instanceBody, startTestEmulator, TEST_TIMELINE } from './gcp-emulator.test.helpers.js';

let emulator: GcpEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function start() {
  const started = await startTestEmulator();
  emulator = started.emulator;
  const call = (method: string, path: string, body?: unknown) =>
    compute(started.emulator, started.token, method, path, body);
  return { ...started, call };
}

const ZONE = 'us-central1-a';
const T4 = { acceleratorType: 'nvidia-tesla-t4', acceleratorCount: 1 };

/** `reservationAffinity` naming `reference` (a name or `projects/P/reservations/N`), as dstack sends it. */
function affinity(reference: string) {
  return {
    reservationAffinity: {
      consumeReservationType: 'SPECIFIC_RESERVATION',
      key: 'compute.googleapis.com/reservation-name',
      values: [reference],
    },
  };
}

describe('reservations', () => {
  it('lists a reservation with its count and use, aggregated by zone with a filter', async () => {
    const { call } = await start();
    emulator?.addReservation({
      name: 'team-t4',
      zone: ZONE,
      machineType: 'n1-standard-4',
      count: 2,
      guestAccelerator: T4,
    });
    emulator?.addReservation({
      name: 'team-t4',
      zone: 'us-central1-b',
      machineType: 'n1-standard-4',
      count: 1,
      status: 'CREATING',
    });
    const got = await call('GET', `zones/${ZONE}/reservations/team-t4`);
    expect(got.body).toMatchObject({
      kind: 'compute#reservation',
      name: 'team-t4',
      zone: expect.stringMatching(/\/zones\/us-central1-a$/),
      status: 'READY',
      specificReservationRequired: true,
      specificReservation: {
        count: '2',
        inUseCount: '0',
        assuredCount: '2',
        instanceProperties: { machineType: 'n1-standard-4', guestAccelerators: [T4] },
      },
    });
    // dstack's look-up.
    const filter = '(name = "team-t4") AND (status = "READY") AND (specificReservationRequired = true)';
    const aggregated = await call('GET', `aggregated/reservations?filter=${encodeURIComponent(filter)}`);
    const zonesWithOne = Object.entries(aggregated.body.items as Record<string, { reservations: unknown[] }>)
      .filter(([, scope]) => scope.reservations.length > 0)
      .map(([scope]) => scope);
    expect(zonesWithOne).toEqual([`zones/${ZONE}`]);
    expect((await call('GET', 'zones/us-central1-c/reservations/team-t4')).status).toBe(404);
  });

  it('inserts into the named reservation, counts it in use, and frees it when the instance is deleted', async () => {
    const { call, clock } = await start();
    emulator?.addReservation({
      name: 'team-t4',
      zone: ZONE,
      machineType: 'n1-standard-4',
      count: 1,
      guestAccelerator: T4,
    });
    emulator?.addFault({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED' });
    const inserted = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('reserved-1', ZONE, affinity(`projects/${emulator?.project}/reservations/team-t4`)),
    );
    expect(inserted.status).toBe(200);
    clock.advance(TEST_TIMELINE.provisioningMs);
    // The zone has no capacity left, but the reservation had it.
    expect((await call('GET', `zones/${ZONE}/operations/${inserted.body.name}`)).body.error).toBeUndefined();
    expect(
      (await call('GET', `zones/${ZONE}/reservations/team-t4`)).body.specificReservation.inUseCount,
    ).toBe('1');
    expect(emulator?.state().reservations).toEqual([
      {
        name: 'team-t4',
        zone: ZONE,
        machineType: 'n1-standard-4',
        status: 'READY',
        count: 1,
        instances: ['reserved-1'],
      },
    ]);
    const full = await call(
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('reserved-2', ZONE, affinity('team-t4')),
    );
    expect(full.status).toBe(400);
    expect(full.body.error.message).toContain('Reservation does not have enough resources');

    await call('DELETE', `zones/${ZONE}/instances/reserved-1`);
    clock.advance(TEST_TIMELINE.stoppingMs);
    expect(
      (await call('GET', `zones/${ZONE}/reservations/team-t4`)).body.specificReservation.inUseCount,
    ).toBe('0');
  });

  it("refuses an unknown reservation, one not READY or not specific, other machine properties, spot and another project's", async () => {
    const { call } = await start();
    emulator?.addReservation({
      name: 'team-t4',
      zone: ZONE,
      machineType: 'n1-standard-4',
      count: 1,
      guestAccelerator: T4,
    });
    emulator?.addReservation({
      name: 'open-t4',
      zone: ZONE,
      machineType: 'n1-standard-4',
      count: 1,
      guestAccelerator: T4,
      specificReservationRequired: false,
    });
    emulator?.addReservation({
      name: 'new-t4',
      zone: ZONE,
      machineType: 'n1-standard-4',
      count: 1,
      guestAccelerator: T4,
      status: 'CREATING',
    });
    const refusals: Array<[Record<string, unknown>, string]> = [
      [affinity('nowhere'), 'Could not find the given reservation with the following name: nowhere'],
      [affinity('open-t4'), 'can not be targeted as specificReservationRequired is not set'],
      [affinity('new-t4'), 'it requires reservation to be in READY state'],
      [{ ...affinity('team-t4'), machineType: `zones/${ZONE}/machineTypes/n1-standard-8` }, 'do not match'],
      [{ ...affinity('team-t4'), scheduling: { provisioningModel: 'SPOT' } }, 'do not match'],
      [affinity('projects/elsewhere/reservations/team-t4'), 'same project as the instance'],
    ];
    for (const [overrides, message] of refusals) {
      const answer = await call('POST', `zones/${ZONE}/instances`, instanceBody('refused', ZONE, overrides));
      expect(answer.status, message).toBe(400);
      expect(answer.body.error.message).toContain(message);
    }
    expect(emulator?.state().instances).toEqual([]);
  });

  it('makes a reservation over HTTP, refusing a bad one naming the field', async () => {
    await start();
    const post = (body: unknown) =>
      fetch(`${emulator?.url}/_emulator/reservations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const made = await post({ name: 'http-t4', zone: ZONE, machineType: 'n1-standard-4', count: 1 });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ name: 'http-t4', zone: ZONE, status: 'READY', instances: [] });
    const refused = await post({ name: 'http-t4', zone: 'mars-1a', machineType: 'n1-standard-4', count: 1 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^zone:/);
  });
});
