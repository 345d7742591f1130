/**
 * What the AWS emulator's control API (`GET /_emulator/state`) shows of its account: instances,
 * EBS volumes, placement groups, Capacity Reservations and the loop devices holding volumes.
 */
import type { LoopBackedDisks } from '../hosts/loop-block-devices.js';
import type { Ec2Account } from './aws-ec2-account.js';
import type {
  CapacityReservationState,
  CapacityReservationType,
  Ec2CapacityReservation,
} from './aws-ec2-capacity-reservations.js';
import type { Ec2InstanceStateName } from './aws-ec2-instances.js';
import type { Ec2AttachmentStatus, Ec2VolumeStatus } from './aws-ec2-volumes.js';
import type { AwsMarket } from './aws-vcpu-quotas.js';

/** One instance as `GET /_emulator/state` lists it; `state` as EC2 names it. */
export interface AwsEmulatorInstanceState {
  readonly id: string;
  readonly type: string;
  readonly zone: string;
  readonly market: AwsMarket;
  readonly state: Ec2InstanceStateName;
  /** The Capacity Reservation (or Capacity Block) it runs in, or null. */
  readonly capacityReservationId: string | null;
}

/** A Capacity Reservation as `GET /_emulator/state` lists it (`addCapacityReservation` answers it too). */
export interface AwsEmulatorCapacityReservationState {
  readonly id: string;
  readonly region: string;
  readonly zone: string;
  readonly instanceType: string;
  readonly reservationType: CapacityReservationType;
  readonly state: CapacityReservationState;
  readonly totalInstanceCount: number;
  readonly availableInstanceCount: number;
  /** Its pending and running instances. */
  readonly instances: readonly string[];
}

/** An EBS volume as `GET /_emulator/state` lists it. */
export interface AwsEmulatorVolumeState {
  readonly id: string;
  readonly zone: string;
  readonly sizeGiB: number;
  readonly status: Ec2VolumeStatus;
  readonly attachment: {
    readonly instanceId: string;
    readonly device: string;
    readonly status: Ec2AttachmentStatus;
    /** The device in the host (`/dev/nvme1n1`), when it is a real one. */
    readonly hostDevice: string | null;
  } | null;
}

export interface AwsEmulatorPlacementGroupState {
  readonly name: string;
  readonly region: string;
  readonly strategy: string;
  /** Live (pending or running) instances in it. */
  readonly instances: readonly string[];
}

export interface AwsEmulatorState {
  readonly instances: readonly AwsEmulatorInstanceState[];
  readonly volumes: readonly AwsEmulatorVolumeState[];
  readonly placementGroups: readonly AwsEmulatorPlacementGroupState[];
  readonly capacityReservations: readonly AwsEmulatorCapacityReservationState[];
  /** Loop devices holding attached volumes now (the volume id and the device on this machine). */
  readonly loopDevices: readonly { readonly volumeId: string; readonly path: string }[];
}

/** A reservation as the control API shows it: its free count and live instances now. */
export function capacityReservationState(
  account: Ec2Account,
  reservation: Ec2CapacityReservation,
): AwsEmulatorCapacityReservationState {
  return {
    id: reservation.id,
    region: reservation.region,
    zone: reservation.zone,
    instanceType: reservation.instanceType,
    reservationType: reservation.reservationType,
    state: reservation.state,
    totalInstanceCount: reservation.instanceCount,
    availableInstanceCount: account.capacityReservations.available(reservation),
    instances: account.instances
      .all()
      .filter((instance) => instance.capacityReservationId === reservation.id)
      .filter((instance) => ['pending', 'running'].includes(account.instances.state(instance)))
      .map((instance) => instance.id),
  };
}

/** Everything `GET /_emulator/state` lists, as it is now. */
export function awsEmulatorState(account: Ec2Account, disks: LoopBackedDisks | undefined): AwsEmulatorState {
  return {
    instances: account.instances.all().map((instance) => ({
      id: instance.id,
      type: instance.type,
      zone: instance.zone,
      market: instance.market,
      state: account.instances.state(instance),
      capacityReservationId: instance.capacityReservationId ?? null,
    })),
    volumes: account.volumes.all().map((volume) => {
      const attachmentStatus = account.volumes.attachmentStatus(volume);
      const attachment = volume.attachment;
      return {
        id: volume.id,
        zone: volume.zone,
        sizeGiB: volume.sizeGiB,
        status: account.volumes.status(volume),
        attachment:
          attachment && attachmentStatus
            ? {
                instanceId: attachment.instanceId,
                device: attachment.device,
                status: attachmentStatus,
                hostDevice: attachment.hostDevice?.path ?? null,
              }
            : null,
      };
    }),
    placementGroups: account.volumes.placementGroups.map((group) => ({
      name: group.name,
      region: group.region,
      strategy: group.strategy,
      instances: account.instances
        .all()
        .filter((instance) => instance.placementGroup === group.name && instance.region === group.region)
        .filter((instance) => ['pending', 'running'].includes(account.instances.state(instance)))
        .map((instance) => instance.id),
    })),
    capacityReservations: account.capacityReservations
      .all()
      .map((reservation) => capacityReservationState(account, reservation)),
    loopDevices: [...(disks?.attached() ?? new Map())].map(([volumeId, loop]) => ({
      volumeId,
      path: loop.path,
    })),
  };
}
