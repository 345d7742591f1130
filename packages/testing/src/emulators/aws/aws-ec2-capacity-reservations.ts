/**
 * Capacity Reservations of the emulated account: On-Demand Capacity Reservations (`default`) and
 * Capacity Blocks for ML (`capacity-block`), as the EC2 API reference describes them. Tests make
 * them (EC2's CreateCapacityReservation and Capacity Block purchases are not what dstack calls);
 * the API reads them (`DescribeCapacityReservations`) and RunInstances launches into them
 * (`launchTargetOf`): a launch takes as many of the reservation's instances as it starts, and a
 * terminated instance gives its place back. What a reservation has left is worked out from its
 * instances whenever someone looks, as instance states are.
 */
import type { AwsEmulatorData } from './aws-emulator-data.js';
import { type QueryParams, subParams } from './aws-query-params.js';
import { Ec2ApiError } from './ec2-api-error.js';

/** EC2's states of a Capacity Reservation (`CapacityReservationState`). */
export const CAPACITY_RESERVATION_STATES = [
  'active',
  'expired',
  'cancelled',
  'pending',
  'failed',
  'scheduled',
  'payment-pending',
  'payment-failed',
  'assessing',
  'delayed',
  'unsupported',
  'cancelling',
  'unavailable',
] as const;
export type CapacityReservationState = (typeof CAPACITY_RESERVATION_STATES)[number];

export type CapacityReservationType = 'default' | 'capacity-block';
export type CapacityReservationTenancy = 'default' | 'dedicated';
/** `open`: matching launches without a target fall into it too; `targeted`: only launches naming it. */
export type InstanceMatchCriteria = 'open' | 'targeted';

/** What a test gives to make a reservation (`AwsEmulator.addCapacityReservation`). */
export interface CapacityReservationSpec {
  readonly instanceType: string;
  /** The zone's name (`us-east-1b`); the reservation is in its region. */
  readonly availabilityZone: string;
  /** How many instances it holds. */
  readonly instanceCount: number;
  /** Default `active`. */
  readonly state?: CapacityReservationState;
  /** Default `default` (an On-Demand Capacity Reservation). */
  readonly reservationType?: CapacityReservationType;
  /** Default `default`. */
  readonly tenancy?: CapacityReservationTenancy;
  /** Default `open` for an On-Demand Capacity Reservation (CreateCapacityReservation's), `targeted` for a Capacity Block (always so in EC2). */
  readonly instanceMatchCriteria?: InstanceMatchCriteria;
  /** When it ends (ISO 8601); a Capacity Block always has one. Default: none (`unlimited`), a day after its start for a block. */
  readonly endDate?: string;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface Ec2CapacityReservation {
  readonly id: string;
  readonly region: string;
  readonly zone: string;
  readonly zoneId: string;
  readonly instanceType: string;
  readonly instanceCount: number;
  readonly reservationType: CapacityReservationType;
  readonly tenancy: CapacityReservationTenancy;
  readonly instanceMatchCriteria: InstanceMatchCriteria;
  readonly createdAt: number;
  readonly endDate: string | undefined;
  readonly tags: ReadonlyMap<string, string>;
  state: CapacityReservationState;
}

/** A launch's place in a reservation: which one, and whether it named it (else an `open` one took it). */
export interface CapacityReservationLaunchTarget {
  readonly reservation: Ec2CapacityReservation;
  readonly targeted: boolean;
}

/** What RunInstances asked about reservations (`CapacityReservationSpecification`, the market). */
export interface CapacityReservationRequest {
  /** `CapacityReservationTarget.CapacityReservationId`. */
  readonly targetId: string | undefined;
  /** `CapacityReservationPreference`: `open` (EC2's default), `none`, `capacity-reservations-only`. */
  readonly preference: 'open' | 'none' | 'capacity-reservations-only';
  /** `InstanceMarketOptions.MarketType=capacity-block`. */
  readonly capacityBlockMarket: boolean;
}

/** What a launch offers a reservation: its type, zone, tenancy and how many instances. */
export interface CapacityReservationLaunch {
  readonly region: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly tenancy: string;
  readonly spot: boolean;
  readonly minCount: number;
}

const CAPACITY_RESERVATION_ID_PATTERN = /^cr-[0-9a-f]{8,17}$/;
const PREFERENCES = ['open', 'none', 'capacity-reservations-only'] as const;
const DAY_MS = 24 * 60 * 60 * 1000;

/** What EC2 answers when a targeted reservation cannot take the launch (type, zone, tenancy, state or room). */
function noCompatibleCapacity(): Ec2ApiError {
  return new Ec2ApiError(
    400,
    'ReservationCapacityExceeded',
    'The requested reservation does not have sufficient compatible and available capacity for this request.',
  );
}

/** What EC2 answers when the market type does not fit the reservation (a Capacity Block needs `capacity-block`, and only it takes it). */
function invalidMarketType(): Ec2ApiError {
  return new Ec2ApiError(
    400,
    'InvalidParameterValue',
    'The market type (purchasing) option is not valid. Choose a different market type and try again',
  );
}

export function checkCapacityReservationId(id: string): void {
  if (CAPACITY_RESERVATION_ID_PATTERN.test(id)) return;
  throw new Ec2ApiError(
    400,
    'InvalidCapacityReservationId.Malformed',
    `Invalid id: "${id}" (expecting "cr-" and 17 hexadecimal digits)`,
  );
}

export function capacityReservationNotFound(id: string): Ec2ApiError {
  return new Ec2ApiError(
    400,
    'InvalidCapacityReservationId.NotFound',
    `The capacity reservation ID '${id}' does not exist`,
  );
}

/** `CapacityReservationSpecification.*` and the market type of a RunInstances request. */
export function capacityReservationRequestOf(params: QueryParams): CapacityReservationRequest {
  const specification = subParams(params, 'CapacityReservationSpecification');
  const targetId = specification['CapacityReservationTarget.CapacityReservationId'] || undefined;
  if (specification['CapacityReservationTarget.CapacityReservationResourceGroupArn']) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      'CapacityReservationTarget.CapacityReservationResourceGroupArn: the emulator has no Capacity Reservation groups',
    );
  }
  const given = specification.CapacityReservationPreference;
  if (given !== undefined && !(PREFERENCES as readonly string[]).includes(given)) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${given}) for parameter CapacityReservationPreference is invalid. Valid values: ${PREFERENCES.join(', ')}`,
    );
  }
  if (targetId !== undefined && given !== undefined && given !== 'capacity-reservations-only') {
    throw new Ec2ApiError(
      400,
      'InvalidParameterCombination',
      'The request can include either a CapacityReservationId or a CapacityReservationPreference but not both.',
    );
  }
  return {
    targetId,
    preference: (given ?? 'open') as CapacityReservationRequest['preference'],
    capacityBlockMarket: params['InstanceMarketOptions.MarketType'] === 'capacity-block',
  };
}

export class Ec2CapacityReservations {
  readonly #all: Ec2CapacityReservation[] = [];
  readonly #data: AwsEmulatorData;
  readonly #accountId: string;
  readonly #clock: () => number;
  readonly #liveInstancesIn: (reservationId: string) => number;
  #sequence = 0;

  /** `liveInstancesIn`: how many pending or running instances a reservation holds now. */
  constructor(options: {
    data: AwsEmulatorData;
    accountId: string;
    clock: () => number;
    liveInstancesIn: (reservationId: string) => number;
  }) {
    this.#data = options.data;
    this.#accountId = options.accountId;
    this.#clock = options.clock;
    this.#liveInstancesIn = options.liveInstancesIn;
  }

  all(): readonly Ec2CapacityReservation[] {
    return this.#all;
  }

  /** Makes a reservation; a test's mistake (unknown zone or type, a type the zone lacks) throws naming the field. */
  add(spec: CapacityReservationSpec): Ec2CapacityReservation {
    const zone = this.#data.zone(spec.availabilityZone);
    if (!zone) {
      throw new Error(
        `availabilityZone: the AWS emulator has no zone ${JSON.stringify(spec.availabilityZone)}; known: ${this.#data.zones.map((each) => each.name).join(', ')}`,
      );
    }
    if (!this.#data.offering(spec.instanceType, zone.name)) {
      throw new Error(
        `instanceType: ${JSON.stringify(spec.instanceType)} is not offered in ${zone.name}, so no reservation can hold it`,
      );
    }
    if (!Number.isInteger(spec.instanceCount) || spec.instanceCount < 1) {
      throw new Error(`instanceCount: a whole number of at least 1, not ${spec.instanceCount}`);
    }
    const state = spec.state ?? 'active';
    if (!CAPACITY_RESERVATION_STATES.includes(state)) {
      throw new Error(
        `state: one of ${CAPACITY_RESERVATION_STATES.join(', ')}, not ${JSON.stringify(state)}`,
      );
    }
    const reservationType = spec.reservationType ?? 'default';
    if (reservationType !== 'default' && reservationType !== 'capacity-block') {
      throw new Error(`reservationType: default or capacity-block, not ${JSON.stringify(reservationType)}`);
    }
    const tenancy = spec.tenancy ?? 'default';
    if (tenancy !== 'default' && tenancy !== 'dedicated') {
      throw new Error(`tenancy: default or dedicated, not ${JSON.stringify(tenancy)}`);
    }
    const capacityBlock = reservationType === 'capacity-block';
    const instanceMatchCriteria = spec.instanceMatchCriteria ?? (capacityBlock ? 'targeted' : 'open');
    if (capacityBlock && instanceMatchCriteria !== 'targeted') {
      throw new Error(
        'instanceMatchCriteria: a Capacity Block only takes launches that target it (targeted)',
      );
    }
    if (spec.endDate !== undefined && Number.isNaN(Date.parse(spec.endDate))) {
      throw new Error(`endDate: an ISO 8601 date, not ${JSON.stringify(spec.endDate)}`);
    }
    const createdAt = this.#clock();
    this.#sequence += 1;
    const reservation: Ec2CapacityReservation = {
      // A recognisable id: `cr-` and 17 hex digits, numbered in the emulator's order.
      id: `cr-0e${this.#sequence.toString(16).padStart(15, '0')}`,
      region: zone.region,
      zone: zone.name,
      zoneId: zone.id,
      instanceType: spec.instanceType,
      instanceCount: spec.instanceCount,
      reservationType,
      tenancy,
      instanceMatchCriteria,
      createdAt,
      endDate: spec.endDate ?? (capacityBlock ? new Date(createdAt + DAY_MS).toISOString() : undefined),
      tags: new Map(Object.entries(spec.tags ?? {})),
      state,
    };
    this.#all.push(reservation);
    return reservation;
  }

  /** Moves a reservation to another state (it expired, was cancelled, its block started). */
  setState(id: string, state: CapacityReservationState): Ec2CapacityReservation {
    if (!CAPACITY_RESERVATION_STATES.includes(state)) {
      throw new Error(
        `state: one of ${CAPACITY_RESERVATION_STATES.join(', ')}, not ${JSON.stringify(state)}`,
      );
    }
    const reservation = this.#all.find((each) => each.id === id);
    if (!reservation) throw new Error(`The AWS emulator has no capacity reservation ${id}`);
    reservation.state = state;
    return reservation;
  }

  /** The reservation `id` of `region`, as the API sees it (another region's is not found). */
  find(region: string, id: string): Ec2CapacityReservation | undefined {
    return this.#all.find((each) => each.id === id && each.region === region);
  }

  /** Instances it can still take: none unless `active`. */
  available(reservation: Ec2CapacityReservation): number {
    if (reservation.state !== 'active') return 0;
    return Math.max(0, reservation.instanceCount - this.#liveInstancesIn(reservation.id));
  }

  arn(reservation: Ec2CapacityReservation): string {
    return `arn:aws:ec2:${reservation.region}:${this.#accountId}:capacity-reservation/${reservation.id}`;
  }

  /**
   * The reservation a RunInstances launches into, or undefined for one outside any. A targeted
   * reservation must exist in the region, be active, match the type, zone and tenancy and have room
   * for MinCount (else `ReservationCapacityExceeded`); a Capacity Block needs the `capacity-block`
   * market and that market needs one. Without a target an on-demand launch falls into an `open`
   * reservation that fits (unless its preference is `none`).
   */
  launchTargetOf(
    request: CapacityReservationRequest,
    launch: CapacityReservationLaunch,
  ): CapacityReservationLaunchTarget | undefined {
    if (request.targetId !== undefined) {
      const reservation = this.targetOf(launch.region, request.targetId);
      if ((reservation.reservationType === 'capacity-block') !== request.capacityBlockMarket) {
        throw invalidMarketType();
      }
      if (launch.spot) throw invalidMarketType();
      if (!this.#fits(reservation, launch)) throw noCompatibleCapacity();
      return { reservation, targeted: true };
    }
    if (request.capacityBlockMarket) throw invalidMarketType();
    if (launch.spot || request.preference === 'none') return undefined;
    const open = this.#all.find(
      (each) =>
        each.region === launch.region &&
        each.instanceMatchCriteria === 'open' &&
        each.reservationType === 'default' &&
        this.#fits(each, launch),
    );
    if (open) return { reservation: open, targeted: false };
    if (request.preference === 'capacity-reservations-only') throw noCompatibleCapacity();
    return undefined;
  }

  /** The targeted reservation: a well-formed id of this region's. */
  targetOf(region: string, id: string): Ec2CapacityReservation {
    checkCapacityReservationId(id);
    const reservation = this.find(region, id);
    if (!reservation) throw capacityReservationNotFound(id);
    return reservation;
  }

  #fits(reservation: Ec2CapacityReservation, launch: CapacityReservationLaunch): boolean {
    return (
      reservation.instanceType === launch.instanceType &&
      reservation.zone === launch.zone &&
      reservation.tenancy === launch.tenancy &&
      this.available(reservation) >= launch.minCount
    );
  }
}
