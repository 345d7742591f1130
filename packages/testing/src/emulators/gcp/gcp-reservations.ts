/**
 * Zonal reservations of the emulated project (Compute Engine's `compute#reservation`), made by
 * tests (`GcpEmulator.addReservation`): a count of one machine type (and its accelerators) in one
 * zone. The API lists them (`reservations.list`, `aggregatedList` with a filter, `get`), and an
 * insert with `reservationAffinity` SPECIFIC_RESERVATION consumes one, with Compute's refusals:
 * no reservation of that name in the zone, one that does not require specific targeting
 * (`specificReservationRequired` unset), one not READY, one whose properties the instance does not
 * match or that is full. `inUseCount` is worked out from its instances whenever someone looks.
 */

import { GcpApiError } from './gcp-api-error.js';
import type { GcpInstance, GcpInstances } from './gcp-compute-instances.js';
import { lastSegment, link, rfc3339 } from './gcp-compute-resources.js';
import type { GcpEmulatorData } from './gcp-emulator-data.js';

export const GCP_RESERVATION_STATUSES = ['CREATING', 'READY', 'DELETING', 'UPDATING'] as const;
export type GcpReservationStatus = (typeof GCP_RESERVATION_STATUSES)[number];

/** The key `reservationAffinity` names a specific reservation by. */
export const RESERVATION_NAME_KEY = 'compute.googleapis.com/reservation-name';

/** What a test gives to make a reservation. */
export interface GcpReservationSpec {
  readonly name: string;
  readonly zone: string;
  readonly machineType: string;
  /** How many instances it holds. */
  readonly count: number;
  /** Its GPUs per instance, e.g. `{acceleratorType: 'nvidia-tesla-t4', acceleratorCount: 1}`. */
  readonly guestAccelerator?: { readonly acceleratorType: string; readonly acceleratorCount: number };
  /** Only instances that name it consume it. Default true (dstack only looks for such ones). */
  readonly specificReservationRequired?: boolean;
  /** Default READY. */
  readonly status?: GcpReservationStatus;
}

export interface GcpReservation extends Required<Omit<GcpReservationSpec, 'guestAccelerator'>> {
  readonly guestAccelerator: GcpReservationSpec['guestAccelerator'];
  readonly id: string;
  readonly createdAt: number;
  status: GcpReservationStatus;
}

export class GcpReservations {
  readonly #all: GcpReservation[] = [];
  readonly #project: string;
  readonly #data: GcpEmulatorData;
  readonly #instances: GcpInstances;
  readonly #clock: () => number;

  constructor(project: string, data: GcpEmulatorData, instances: GcpInstances, clock: () => number) {
    this.#project = project;
    this.#data = data;
    this.#instances = instances;
    this.#clock = clock;
  }

  all(): readonly GcpReservation[] {
    return this.#all;
  }

  in(zone: string): GcpReservation[] {
    return this.#all.filter((each) => each.zone === zone);
  }

  /** Makes a reservation; a test's mistake (unknown zone or machine type, a taken name) throws naming the field. */
  add(spec: GcpReservationSpec): GcpReservation {
    if (!/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(spec.name)) {
      throw new Error(
        `name: a Compute resource name (lowercase letters, digits, dashes), not ${JSON.stringify(spec.name)}`,
      );
    }
    if (!this.#data.zones.some((each) => each.name === spec.zone)) {
      throw new Error(`zone: the GCP emulator has no zone ${JSON.stringify(spec.zone)}`);
    }
    if (!this.#data.machineOffering(spec.machineType, spec.zone)) {
      throw new Error(`machineType: ${JSON.stringify(spec.machineType)} is not offered in ${spec.zone}`);
    }
    if (!Number.isInteger(spec.count) || spec.count < 1) {
      throw new Error(`count: a whole number of at least 1, not ${spec.count}`);
    }
    if (this.in(spec.zone).some((each) => each.name === spec.name)) {
      throw new Error(`name: ${spec.zone} already has a reservation ${spec.name}`);
    }
    const status = spec.status ?? 'READY';
    if (!GCP_RESERVATION_STATUSES.includes(status)) {
      throw new Error(`status: one of ${GCP_RESERVATION_STATUSES.join(', ')}, not ${JSON.stringify(status)}`);
    }
    const reservation: GcpReservation = {
      name: spec.name,
      zone: spec.zone,
      machineType: spec.machineType,
      count: spec.count,
      guestAccelerator: spec.guestAccelerator,
      specificReservationRequired: spec.specificReservationRequired ?? true,
      status,
      id: String(7_000_000_000_000_000_000n + BigInt(this.#all.length + 1)),
      createdAt: this.#clock(),
    };
    this.#all.push(reservation);
    return reservation;
  }

  setStatus(zone: string, name: string, status: GcpReservationStatus): GcpReservation {
    if (!GCP_RESERVATION_STATUSES.includes(status)) {
      throw new Error(`status: one of ${GCP_RESERVATION_STATUSES.join(', ')}, not ${JSON.stringify(status)}`);
    }
    const reservation = this.in(zone).find((each) => each.name === name);
    if (!reservation) throw new Error(`The GCP emulator has no reservation ${name} in ${zone}`);
    reservation.status = status;
    return reservation;
  }

  /** Its live (not stopping or gone) instances. */
  instancesOf(reservation: GcpReservation): GcpInstance[] {
    return this.#instances.all().filter((instance) => {
      if (instance.zone !== reservation.zone || reservationNameOf(instance.body) !== reservation.name)
        return false;
      const status = this.#instances.status(instance);
      return status !== undefined && status !== 'STOPPING' && status !== 'TERMINATED';
    });
  }

  resource(reservation: GcpReservation): Record<string, unknown> {
    const zonePath = `projects/${this.#project}/zones/${reservation.zone}`;
    const inUse = this.instancesOf(reservation).length;
    return {
      kind: 'compute#reservation',
      id: reservation.id,
      creationTimestamp: rfc3339(reservation.createdAt),
      selfLink: link(`${zonePath}/reservations/${reservation.name}`),
      zone: link(zonePath),
      name: reservation.name,
      specificReservation: {
        instanceProperties: {
          machineType: reservation.machineType,
          ...(reservation.guestAccelerator ? { guestAccelerators: [reservation.guestAccelerator] } : {}),
        },
        // int64 fields are strings on the wire.
        count: String(reservation.count),
        inUseCount: String(inUse),
        assuredCount: String(reservation.count),
      },
      commitment: '',
      specificReservationRequired: reservation.specificReservationRequired,
      status: reservation.status,
      shareSettings: { shareType: 'LOCAL' },
    };
  }

  /**
   * The reservation an insert in `zone` consumes (its `reservationAffinity`), or undefined without
   * one; Compute's error when the reservation cannot take the instance.
   */
  checkInsert(
    zone: string,
    body: Readonly<Record<string, unknown>>,
    spot: boolean,
  ): GcpReservation | undefined {
    const affinity = (body.reservationAffinity ?? {}) as {
      consumeReservationType?: unknown;
      key?: unknown;
      values?: unknown;
    };
    if (affinity.consumeReservationType !== 'SPECIFIC_RESERVATION') return undefined;
    const values = Array.isArray(affinity.values) ? affinity.values.map(String) : [];
    const shown = `'${JSON.stringify(affinity)}'`;
    if (affinity.key !== RESERVATION_NAME_KEY || values.length !== 1) {
      throw invalidAffinity(
        shown,
        `A specific reservation is named by key '${RESERVATION_NAME_KEY}' and one value`,
      );
    }
    const reference = values[0] as string;
    const owner = /^projects\/([^/]+)\/reservations\/[^/]+$/.exec(reference)?.[1];
    if (owner !== undefined && owner !== this.#project) {
      throw invalidAffinity(shown, 'The reservation must exist in the same project as the instance');
    }
    const name = lastSegment(reference);
    const reservation = this.in(zone).find((each) => each.name === name);
    if (!reservation) {
      throw invalidAffinity(shown, `Could not find the given reservation with the following name: ${name}`);
    }
    if (!reservation.specificReservationRequired) {
      throw invalidAffinity(
        shown,
        `Specified reservations [projects/${this.#project}/reservations/${name}] can not be targeted as specificReservationRequired is not set`,
      );
    }
    if (reservation.status !== 'READY') {
      throw invalidAffinity(
        shown,
        `Cannot consume reservation ${name}: it requires reservation to be in READY state`,
      );
    }
    if (spot || !this.#matches(reservation, body)) {
      throw invalidAffinity(
        shown,
        `Instance properties do not match those of reservation ${name} (${reservation.machineType}${reservation.guestAccelerator ? `, ${reservation.guestAccelerator.acceleratorCount} x ${reservation.guestAccelerator.acceleratorType}` : ''}, standard provisioning)`,
      );
    }
    if (this.instancesOf(reservation).length >= reservation.count) {
      throw new GcpApiError(
        400,
        'invalid',
        `Reservation does not have enough resources for the request: specific reservation "${name}" in zone "${zone}" has ${reservation.count} of ${reservation.count} VMs in use`,
      );
    }
    return reservation;
  }

  #matches(reservation: GcpReservation, body: Readonly<Record<string, unknown>>): boolean {
    if (lastSegment(String(body.machineType ?? '')) !== reservation.machineType) return false;
    const guests = Array.isArray(body.guestAccelerators)
      ? (body.guestAccelerators as { acceleratorType?: unknown; acceleratorCount?: unknown }[])
      : [];
    const wanted = reservation.guestAccelerator;
    if (!wanted) return guests.length === 0;
    return (
      guests.length === 1 &&
      lastSegment(String(guests[0]?.acceleratorType ?? '')) === wanted.acceleratorType &&
      Number(guests[0]?.acceleratorCount) === wanted.acceleratorCount
    );
  }
}

/** The reservation an instance's insert named, if any. */
export function reservationNameOf(body: Readonly<Record<string, unknown>>): string | undefined {
  const affinity = body.reservationAffinity as
    | { consumeReservationType?: unknown; values?: unknown }
    | undefined;
  if (affinity?.consumeReservationType !== 'SPECIFIC_RESERVATION' || !Array.isArray(affinity.values))
    return undefined;
  return lastSegment(String(affinity.values[0] ?? ''));
}

function invalidAffinity(shown: string, why: string): GcpApiError {
  return new GcpApiError(
    400,
    'invalid',
    `Invalid value for field 'resource.reservationAffinity': ${shown}. ${why}`,
  );
}
