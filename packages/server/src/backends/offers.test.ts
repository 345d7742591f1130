/**
 * Offers for a run with `reservation`: only backends that honour reservations are asked (dstack's
 * `BACKENDS_WITH_RESERVATION_SUPPORT`), and a plan without offers says which backend found what
 * wrong with the reservation.
 */
import type {
  BackendPlugin,
  Capability,
  Compute,
  InstanceOfferWithAvailability,
  Requirements,
} from '@dstack/core';
import { anyCpuOfferRequirements, fakeOffers } from '@dstack/testing';
import { describe, expect, it } from 'vitest';
import { explainNoOffers, getOffers } from './offers.js';
import type { ProjectBackend } from './registry.js';

const KNOWN_RESERVATION = 'cr-0e000000000000001';

/** A backend whose offers are the fake cloud's; with `reservations`, only those of its one reservation. */
function backend(type: string, capabilities: Capability[]): ProjectBackend {
  const compute = {
    type,
    capabilities,
    async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
      const offers = fakeOffers(type, {}, requirements, null);
      if (!requirements.reservation) return offers;
      return requirements.reservation === KNOWN_RESERVATION ? offers.slice(0, 1) : [];
    },
    async reservationUnusableReason(reservation: string): Promise<string | null> {
      return reservation === KNOWN_RESERVATION ? null : `no reservation ${reservation} in r1`;
    },
    runJob: () => Promise.reject(new Error('not launched here')),
    terminateInstance: () => Promise.resolve(),
    updateProvisioningData: () => Promise.reject(new Error('not launched here')),
  } as unknown as Compute;
  return { type, compute, plugin: {} as BackendPlugin };
}

const reserving = backend('reserving', ['create-instance', 'reservations']);
const plain = backend('plain', ['create-instance']);

function withReservation(reservation: string): Requirements {
  return { ...anyCpuOfferRequirements(), reservation };
}

describe('offers for a reservation', () => {
  it('asks only the backends that honour reservations', async () => {
    const { offers } = await getOffers([reserving, plain], withReservation(KNOWN_RESERVATION));
    expect(offers.map((entry) => entry.backend.type)).toEqual(['reserving']);
    const all = await getOffers([reserving, plain], anyCpuOfferRequirements());
    expect(new Set(all.offers.map((entry) => entry.backend.type))).toEqual(new Set(['reserving', 'plain']));
  });

  it("explains no offers by the reservation, with each backend's reason", async () => {
    const requirements = withReservation('cr-0e00000000000000f');
    expect((await getOffers([reserving, plain], requirements)).offers).toEqual([]);
    const everything = (await getOffers([reserving, plain], anyCpuOfferRequirements())).offers.length;
    expect(await explainNoOffers([reserving, plain], requirements)).toEqual([
      {
        requirement:
          'reservation cr-0e00000000000000f (reserving: no reservation cr-0e00000000000000f in r1)',
        excluded: everything,
      },
    ]);
  });
});
