/**
 * DescribeCapacityReservations: the reservations of the request's region, by id (each must be
 * well formed and exist there) and by EC2's documented filters, paged, with what their instances
 * leave of them (`availableInstanceCount`).
 */
import type { Ec2Account } from './aws-ec2-account.js';
import type { Ec2Action } from './aws-ec2-action.js';
import {
  capacityReservationNotFound,
  checkCapacityReservationId,
  type Ec2CapacityReservation,
} from './aws-ec2-capacity-reservations.js';
import { applyFilters, filtersOf, listValues, pageOf, tagFilterValues } from './aws-query-params.js';
import { ec2Response, type XmlObject } from './aws-xml.js';

/** The operating system every emulated reservation is for (the emulator's images are Linux). */
const INSTANCE_PLATFORM = 'Linux/UNIX';

function capacityReservationXml(account: Ec2Account, reservation: Ec2CapacityReservation): XmlObject {
  const reservations = account.capacityReservations;
  const createDate = new Date(reservation.createdAt).toISOString();
  return {
    capacityReservationId: reservation.id,
    ownerId: account.accountId,
    capacityReservationArn: reservations.arn(reservation),
    availabilityZoneId: reservation.zoneId,
    instanceType: reservation.instanceType,
    instancePlatform: INSTANCE_PLATFORM,
    availabilityZone: reservation.zone,
    tenancy: reservation.tenancy,
    totalInstanceCount: reservation.instanceCount,
    availableInstanceCount: reservations.available(reservation),
    ebsOptimized: false,
    ephemeralStorage: false,
    state: reservation.state,
    startDate: createDate,
    endDate: reservation.endDate,
    endDateType: reservation.endDate === undefined ? 'unlimited' : 'limited',
    instanceMatchCriteria: reservation.instanceMatchCriteria,
    createDate,
    tagSet:
      reservation.tags.size === 0 ? undefined : [...reservation.tags].map(([key, value]) => ({ key, value })),
    reservationType: reservation.reservationType,
  };
}

function filterValues(
  account: Ec2Account,
  reservation: Ec2CapacityReservation,
  name: string,
): string[] | undefined {
  switch (name) {
    case 'instance-type':
      return [reservation.instanceType];
    case 'owner-id':
      return [account.accountId];
    case 'instance-platform':
      return [INSTANCE_PLATFORM];
    case 'availability-zone':
      return [reservation.zone];
    case 'tenancy':
      return [reservation.tenancy];
    case 'state':
      return [reservation.state];
    case 'start-date':
      return [new Date(reservation.createdAt).toISOString()];
    case 'end-date':
      return reservation.endDate === undefined ? [] : [reservation.endDate];
    case 'end-date-type':
      return [reservation.endDate === undefined ? 'unlimited' : 'limited'];
    case 'instance-match-criteria':
      return [reservation.instanceMatchCriteria];
    case 'outpost-arn':
    case 'placement-group-arn':
      return [];
    default:
      return tagFilterValues(reservation.tags, name);
  }
}

const describeCapacityReservations: Ec2Action = (account, region, params) => {
  const ids = listValues(params, 'CapacityReservationId');
  for (const id of ids) checkCapacityReservationId(id);
  const missing = ids.find((id) => !account.capacityReservations.find(region, id));
  if (missing !== undefined) throw capacityReservationNotFound(missing);
  const selected = account.capacityReservations
    .all()
    .filter((each) => each.region === region && (ids.length === 0 || ids.includes(each.id)));
  const filtered = applyFilters(selected, filtersOf(params), (reservation, name) =>
    filterValues(account, reservation, name),
  );
  const { page, nextToken } = pageOf(filtered, params, { min: 1, max: 1000 });
  return ec2Response('DescribeCapacityReservations', {
    capacityReservationSet: page.map((reservation) => capacityReservationXml(account, reservation)),
    nextToken,
  });
};

export const EC2_CAPACITY_RESERVATION_ACTIONS: Readonly<Record<string, Ec2Action>> = {
  DescribeCapacityReservations: describeCapacityReservations,
};
