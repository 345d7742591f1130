/**
 * Everything the emulated AWS account holds (per §E of the cloud reference): offerings and
 * prices, the network, AMIs, key pairs, instances with their ClientToken map, capacity
 * reservations, vCPU quotas and the active faults. The EC2, Service Quotas and Pricing handlers all read and change this one object.
 */
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { LoopBackedDisks } from '../hosts/loop-block-devices.js';
import { Ec2CapacityReservations } from './aws-ec2-capacity-reservations.js';
import { type Ec2Image, type Ec2ImageTemplate, imagesFor } from './aws-ec2-images.js';
import { type AwsEmulatorTimeline, Ec2Instances } from './aws-ec2-instances.js';
import { Ec2Network } from './aws-ec2-network.js';
import { Ec2Volumes, type Ec2VolumeTimeline } from './aws-ec2-volumes.js';
import type { AwsEmulatorData } from './aws-emulator-data.js';
import type { AwsEmulatorFaults } from './aws-emulator-faults.js';
import { DEFAULT_VCPU_QUOTA, instanceClassOf, VCPU_QUOTAS, type VcpuQuota } from './aws-vcpu-quotas.js';

/** What a ClientToken launched: a repeated RunInstances with the token answers the same reservation. */
export interface ClientTokenRecord {
  readonly reservationId: string;
  readonly instanceIds: readonly string[];
  /** The other parameters of the first call; a different call with the same token is an error. */
  readonly fingerprint: string;
}

export interface KeyPair {
  readonly name: string;
  readonly region: string;
  readonly id: string;
  readonly fingerprint: string;
  readonly publicKey: string;
}

export interface Ec2AccountOptions {
  readonly accountId: string;
  readonly data: AwsEmulatorData;
  readonly faults: AwsEmulatorFaults;
  readonly clock: () => number;
  readonly timeline: AwsEmulatorTimeline;
  readonly hosts: EmulatedHosts | undefined;
  readonly images: readonly Ec2ImageTemplate[];
  /** vCPU quota values by quota code; the rest get `DEFAULT_VCPU_QUOTA`. */
  readonly quotas: Readonly<Record<string, number>>;
  readonly onHostError: (instanceId: string, error: unknown) => void;
  readonly volumeTimeline: Ec2VolumeTimeline;
  /** Where EBS volumes are real block devices (with hosts); undefined: records only. */
  readonly disks: LoopBackedDisks | undefined;
}

export class Ec2Account {
  readonly accountId: string;
  readonly data: AwsEmulatorData;
  readonly faults: AwsEmulatorFaults;
  readonly network: Ec2Network;
  readonly images: readonly Ec2Image[];
  readonly keyPairs: KeyPair[] = [];
  readonly instances: Ec2Instances;
  /** EBS volumes and placement groups. */
  readonly volumes: Ec2Volumes;
  /** Capacity Reservations and Capacity Blocks, with what their instances leave of them. */
  readonly capacityReservations: Ec2CapacityReservations;
  /** By `${region} ${token}`. */
  readonly clientTokens = new Map<string, ClientTokenRecord>();
  readonly cancelledSpotRequests = new Set<string>();
  readonly #quotas: Readonly<Record<string, number>>;
  #addressNumber = 0;

  constructor(options: Ec2AccountOptions) {
    this.accountId = options.accountId;
    this.data = options.data;
    this.faults = options.faults;
    this.network = new Ec2Network(options.data);
    this.images = imagesFor(options.data.regions, options.images);
    this.volumes = new Ec2Volumes({
      clock: options.clock,
      timeline: options.volumeTimeline,
      hosts: options.hosts,
      disks: options.disks,
      onHostError: options.onHostError,
    });
    this.instances = new Ec2Instances({
      clock: options.clock,
      timeline: options.timeline,
      hosts: options.hosts,
      onHostError: options.onHostError,
      onTermination: (instance) => this.volumes.detachAllOf(instance.id),
    });
    this.capacityReservations = new Ec2CapacityReservations({
      data: options.data,
      accountId: options.accountId,
      clock: options.clock,
      liveInstancesIn: (reservationId) => this.instances.liveInReservation(reservationId),
    });
    for (const code of Object.keys(options.quotas)) {
      if (!VCPU_QUOTAS.some((quota) => quota.code === code)) {
        throw new Error(`quotas.${code}: not a vCPU quota code the emulator knows`);
      }
    }
    this.#quotas = options.quotas;
  }

  /** A fresh number for an instance's made-up addresses. */
  nextAddressNumber(): number {
    this.#addressNumber += 1;
    return this.#addressNumber;
  }

  /**
   * The value of a vCPU quota: 0 while a VcpuLimitExceeded (on-demand) or
   * MaxSpotInstanceCountExceeded (spot) fault covers its class, else the configured value.
   */
  quotaValue(quota: VcpuQuota): number {
    const code = quota.market === 'on-demand' ? 'VcpuLimitExceeded' : 'MaxSpotInstanceCountExceeded';
    const zeroed = this.faults
      .list()
      .some(
        (fault) =>
          fault.code === code &&
          (fault.instanceType === undefined || instanceClassOf(fault.instanceType) === quota.instanceClass),
      );
    return zeroed ? 0 : (this.#quotas[quota.code] ?? DEFAULT_VCPU_QUOTA);
  }

  /** vCPUs of pending and running instances counted against `quota` in `region`. */
  quotaUsage(region: string, quota: VcpuQuota): number {
    return this.instances.usedVcpus(region, (instance) =>
      instance.market === quota.market && instanceClassOf(instance.type) === quota.instanceClass
        ? (this.data.instanceTypes.get(instance.type)?.vcpus ?? 0)
        : 0,
    );
  }
}
