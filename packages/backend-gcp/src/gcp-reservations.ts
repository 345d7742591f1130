/**
 * Zonal reservations, as dstack's GCP backend uses them (`find_reservation` in gcp/resources.py,
 * `_offer_matches_reservation` in gcp/compute.py): `reservation` names one by name, or as
 * `projects/P/reservations/N`; `reservations.aggregatedList` with dstack's filter (that name,
 * `READY`, `specificReservationRequired`) finds it in each zone. An offer matches a zone's
 * reservation when its machine type and GPUs are the reservation's; the zone has room while
 * `inUseCount` < `assuredCount`. Instances consume it through `reservationAffinity`.
 */
import type { InstanceOffer } from '@dstack/core';
import { acceleratorTypeOf } from './gcp-accelerators.js';
import type { GcpComputeApi } from './gcp-api.js';

/** dstack's `RESERVATION_PATTERN`: a reservation of another (or this) project. */
const RESERVATION_PATTERN = /^projects\/(?<project>[a-z0-9-]+)\/reservations\/(?<name>[a-z0-9-]+)$/;
/** dstack's `RESOURCE_NAME_PATTERN`: a Compute resource name. */
const RESOURCE_NAME_PATTERN = /^[a-z0-9-]{1,63}$/;

/** The key `reservationAffinity` names a specific reservation by. */
export const RESERVATION_NAME_KEY = 'compute.googleapis.com/reservation-name';

/** How long a look-up is reused: dstack's 20 s, since `inUseCount` changes often. */
export const GCP_RESERVATION_LOOKUP_TTL_MS = 20_000;

export interface GcpReservationReference {
  readonly project: string;
  readonly name: string;
}

/** A zone's reservation as dstack reads it. */
export interface GcpZoneReservation {
  readonly name: string;
  readonly zone: string;
  readonly machineType: string;
  readonly accelerators: readonly { readonly type: string; readonly count: number }[];
  readonly assured: number;
  readonly inUse: number;
}

interface ReservationResource {
  name?: string;
  specificReservation?: {
    instanceProperties?: {
      machineType?: string;
      guestAccelerators?: { acceleratorType?: string; acceleratorCount?: number }[];
    };
    assuredCount?: string;
    inUseCount?: string;
  };
}

/** The project and name `reservation` refers to, or undefined when it cannot name a GCP reservation. */
export function reservationReference(
  reservation: string,
  projectId: string,
): GcpReservationReference | undefined {
  const full = RESERVATION_PATTERN.exec(reservation);
  if (full?.groups) return { project: full.groups.project as string, name: full.groups.name as string };
  return RESOURCE_NAME_PATTERN.test(reservation) ? { project: projectId, name: reservation } : undefined;
}

/** The reservation of that name in each zone of the project (dstack's filter: READY, specific only). */
export async function findReservation(
  api: GcpComputeApi,
  reference: GcpReservationReference,
): Promise<Map<string, GcpZoneReservation>> {
  const filter = `(name = "${reference.name.replace(/["\\]/g, '\\$&')}") AND (status = "READY") AND (specificReservationRequired = true)`;
  const answer = await api.forProject(reference.project).get<{
    items?: Record<string, { reservations?: ReservationResource[] }>;
  }>('aggregated/reservations', { filter });
  const byZone = new Map<string, GcpZoneReservation>();
  for (const [scope, { reservations }] of Object.entries(answer.items ?? {})) {
    const found = reservations?.[0];
    if (!found) continue;
    const zone = scope.split('/').at(-1) ?? scope;
    const properties = found.specificReservation?.instanceProperties;
    byZone.set(zone, {
      name: found.name ?? reference.name,
      zone,
      machineType: properties?.machineType ?? '',
      accelerators: (properties?.guestAccelerators ?? []).map((each) => ({
        type: each.acceleratorType ?? '',
        count: each.acceleratorCount ?? 0,
      })),
      assured: Number(found.specificReservation?.assuredCount ?? 0),
      inUse: Number(found.specificReservation?.inUseCount ?? 0),
    });
  }
  return byZone;
}

/** dstack's `_offer_matches_reservation`: the machine type, and the GPUs' type and count. */
export function offerMatchesReservation(offer: InstanceOffer, reservation: GcpZoneReservation): boolean {
  if (reservation.machineType !== offer.instance.name) return false;
  const gpus = offer.instance.resources.gpus;
  const [accelerator, ...more] = reservation.accelerators;
  if (more.length > 0) return false;
  if (!accelerator) return gpus.length === 0;
  if (accelerator.count !== gpus.length) return false;
  const gpu = gpus[0];
  return gpu === undefined || acceleratorTypeOf(gpu, offer.instance.name) === accelerator.type;
}

/** dstack's `_reservation_has_capacity`. */
export function reservationHasCapacity(reservation: GcpZoneReservation): boolean {
  return reservation.inUse < reservation.assured;
}

/** The insert body's `reservationAffinity` for the reservation. */
export function reservationAffinity(reference: GcpReservationReference) {
  return {
    consumeReservationType: 'SPECIFIC_RESERVATION',
    key: RESERVATION_NAME_KEY,
    values: [`projects/${reference.project}/reservations/${reference.name}`],
  };
}

/** Look-ups of reservations by name, reused for `GCP_RESERVATION_LOOKUP_TTL_MS`; a failed one is not kept. */
export class GcpReservationLookups {
  readonly #cache = new Map<string, { at: number; found: Promise<Map<string, GcpZoneReservation>> }>();
  readonly #api: GcpComputeApi;
  readonly #clock: () => number;

  constructor(api: GcpComputeApi, clock: () => number = Date.now) {
    this.#api = api;
    this.#clock = clock;
  }

  find(reference: GcpReservationReference, fresh = false): Promise<Map<string, GcpZoneReservation>> {
    const key = `${reference.project}/${reference.name}`;
    const now = this.#clock();
    const cached = this.#cache.get(key);
    if (!fresh && cached && now - cached.at < GCP_RESERVATION_LOOKUP_TTL_MS) return cached.found;
    const found = findReservation(this.#api, reference);
    this.#cache.set(key, { at: now, found });
    found.catch(() => this.#cache.delete(key));
    return found;
  }
}
