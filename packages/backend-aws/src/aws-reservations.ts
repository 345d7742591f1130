/**
 * Capacity Reservations and Capacity Blocks, as dstack's AWS backend uses them (`get_reservation`
 * in aws/resources.py): DescribeCapacityReservations by id in each region; a reservation is usable
 * when it is `active` with an instance free (`AvailableInstanceCount` ≥ 1). Its `ReservationType`
 * tells a Capacity Block (`capacity-block`, launched with that market type) from an On-Demand
 * Capacity Reservation. EC2 answers `InvalidCapacityReservationId.NotFound` in every region but
 * the reservation's own, and `.Malformed` for an id that cannot be one: both mean "not here".
 */
import {
  type CapacityReservation,
  DescribeCapacityReservationsCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { awsErrorCode } from './aws-clients.js';

/** A reservation EC2 knows in one region. */
export interface AwsReservation {
  readonly id: string;
  readonly region: string;
  readonly instanceType: string;
  readonly zone: string;
  /** `default` or `dedicated`: instances must be launched with the same `Placement.Tenancy`. */
  readonly tenancy: string;
  readonly capacityBlock: boolean;
  readonly state: string;
  readonly availableInstances: number;
  readonly totalInstances: number;
}

/** The codes with which EC2 says the id names no reservation of the region. */
const NOT_IN_REGION_CODES: ReadonlySet<string> = new Set([
  'InvalidCapacityReservationId.NotFound',
  'InvalidCapacityReservationId.Malformed',
]);

/** How long a look-up for offers is reused: dstack caches its reservation filter for 180 s. */
export const RESERVATION_LOOKUP_TTL_MS = 180_000;

/** The reservation `id` in the client's region as EC2 describes it, in any state; undefined when the region has none by that id. */
export async function describeReservation(
  ec2: EC2Client,
  region: string,
  id: string,
): Promise<AwsReservation | undefined> {
  let found: CapacityReservation | undefined;
  try {
    const answer = await ec2.send(new DescribeCapacityReservationsCommand({ CapacityReservationIds: [id] }));
    found = answer.CapacityReservations?.find((each) => each.CapacityReservationId === id);
  } catch (error) {
    const code = awsErrorCode(error);
    if (code !== undefined && NOT_IN_REGION_CODES.has(code)) return undefined;
    throw error;
  }
  if (!found?.InstanceType || !found.AvailabilityZone) return undefined;
  return {
    id,
    region,
    instanceType: found.InstanceType,
    zone: found.AvailabilityZone,
    tenancy: found.Tenancy ?? 'default',
    capacityBlock: found.ReservationType === 'capacity-block',
    state: found.State ?? 'unknown',
    availableInstances: found.AvailableInstanceCount ?? 0,
    totalInstances: found.TotalInstanceCount ?? 0,
  };
}

/** dstack's rule for launching one instance: active, with one instance free. */
export function isUsable(reservation: AwsReservation): boolean {
  return reservation.state === 'active' && reservation.availableInstances >= 1;
}

/** Why a reservation that EC2 knows cannot take an instance now (not active, or full). */
export function unusableReason(reservation: AwsReservation): string {
  const kind = reservation.capacityBlock ? 'capacity block' : 'capacity reservation';
  if (reservation.state !== 'active') {
    return `${kind} ${reservation.id} in ${reservation.zone} is ${reservation.state}, not active`;
  }
  return `${kind} ${reservation.id} in ${reservation.zone} has no instance free (${reservation.totalInstances} of ${reservation.totalInstances} in use)`;
}

/**
 * Look-ups of reservations by region, reused for `RESERVATION_LOOKUP_TTL_MS` (offers are asked for
 * on every plan and every pass of a waiting job); a failed look-up is not kept.
 */
export class AwsReservationLookups {
  readonly #cache = new Map<string, { at: number; found: Promise<AwsReservation | undefined> }>();
  readonly #ec2: (region: string) => EC2Client;
  readonly #clock: () => number;

  constructor(ec2: (region: string) => EC2Client, clock: () => number = Date.now) {
    this.#ec2 = ec2;
    this.#clock = clock;
  }

  /** The reservation in each of `regions` that has one by that id. */
  async byRegion(regions: readonly string[], id: string): Promise<Map<string, AwsReservation>> {
    const found = await Promise.all(regions.map((region) => this.#lookup(region, id)));
    return new Map(
      found.flatMap((reservation) => (reservation ? [[reservation.region, reservation] as const] : [])),
    );
  }

  #lookup(region: string, id: string): Promise<AwsReservation | undefined> {
    const key = `${region} ${id}`;
    const now = this.#clock();
    const cached = this.#cache.get(key);
    if (cached && now - cached.at < RESERVATION_LOOKUP_TTL_MS) return cached.found;
    const found = describeReservation(this.#ec2(region), region, id);
    this.#cache.set(key, { at: now, found });
    found.catch(() => this.#cache.delete(key));
    return found;
  }
}
