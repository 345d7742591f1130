/**
 * What the emulated AWS account offers: regions, their availability zones, instance types with
 * their GPUs, and per-zone on-demand and spot prices. The data comes from the AWS rows of the
 * catalog's snapshot data (`__fixtures__/aws-instance-offerings.json`, rebuilt by
 * `scripts/build-aws-emulator-data.mjs`), so the emulator sells what the catalog lists, plus the
 * small t3 types the catalog's CPU sample leaves out (t3.micro is dstack's default gateway type).
 */
import offeringsFile from './__fixtures__/aws-instance-offerings.json' with { type: 'json' };

export interface AwsGpuSpec {
  /** As DescribeInstanceTypes names it, e.g. `A10G`, `T4g`. */
  readonly name: string;
  readonly manufacturer: string;
  readonly count: number;
  /** Memory of one GPU. */
  readonly memoryMiB: number;
}

export interface AwsInstanceTypeSpec {
  readonly name: string;
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly gpu: AwsGpuSpec | undefined;
  readonly architecture: 'x86_64' | 'arm64';
  /** Most EFA interfaces the type takes; 0 when it has no EFA. */
  readonly maximumEfaInterfaces: number;
  /** CPU credits (the burstable families: t2, t3, t3a, t4g), as DescribeInstanceTypes says. */
  readonly burstablePerformance: boolean;
}

/** One (instance type, zone) the account can launch, with its prices in USD per hour. */
export interface AwsZoneOffering {
  readonly instanceType: string;
  readonly region: string;
  readonly zone: string;
  readonly zoneId: string;
  readonly onDemandPrice: number | undefined;
  readonly spotPrice: number | undefined;
}

export interface AwsAvailabilityZone {
  readonly name: string;
  readonly id: string;
  readonly region: string;
}

/** The regions an emulator serves unless told: the three the CPU sample of the catalog covers. */
export const DEFAULT_AWS_EMULATOR_REGIONS: readonly string[] = ['us-east-1', 'us-west-2', 'eu-west-1'];

/** EFA interfaces per type (AWS's documented maximums) for the types of the data that have EFA. */
const EFA_INTERFACES: Readonly<Record<string, number>> = {
  'dl1.24xlarge': 4,
  'p4d.24xlarge': 4,
  'p4de.24xlarge': 4,
  'p5.48xlarge': 32,
  'p5e.48xlarge': 32,
  'p5en.48xlarge': 16,
  'trn1.32xlarge': 8,
  'trn1n.32xlarge': 16,
};

/** The families that run on CPU credits. */
const BURSTABLE_FAMILIES = new Set(['t2', 't3', 't3a', 't4g']);

/** Graviton families among the data's types; every other type is x86_64. */
const ARM_FAMILIES = new Set(['g5g']);

export class AwsEmulatorData {
  readonly regions: readonly string[];
  readonly instanceTypes: ReadonlyMap<string, AwsInstanceTypeSpec>;
  readonly zones: readonly AwsAvailabilityZone[];
  readonly offerings: readonly AwsZoneOffering[];
  readonly #offeringByTypeAndZone = new Map<string, AwsZoneOffering>();

  constructor(regions: readonly string[] = DEFAULT_AWS_EMULATOR_REGIONS) {
    const known = new Set(offeringsFile.offerings.map((row) => row[1] as string));
    regions.forEach((region, index) => {
      if (!known.has(region)) {
        throw new Error(
          `regions[${index}]: the AWS emulator has no data for region ${JSON.stringify(region)}; known: ${[...known].sort().join(', ')}`,
        );
      }
    });
    this.regions = [...regions];
    const wanted = new Set(regions);
    const rows = offeringsFile.offerings.filter((row) => wanted.has(row[1] as string));

    // AZ ids (`use1-az2`) are what the data has; names (`us-east-1a`) are per account in AWS.
    // Here the ids of a region, sorted, get the letters a, b, c… in turn.
    const zoneIdsByRegion = new Map<string, Set<string>>();
    for (const row of rows) {
      const ids = zoneIdsByRegion.get(row[1] as string) ?? new Set<string>();
      ids.add(row[2] as string);
      zoneIdsByRegion.set(row[1] as string, ids);
    }
    const zones: AwsAvailabilityZone[] = [];
    const zoneNameById = new Map<string, string>();
    for (const region of regions) {
      [...(zoneIdsByRegion.get(region) ?? [])].sort().forEach((id, index) => {
        const name = `${region}${String.fromCharCode(97 + index)}`;
        zones.push({ name, id, region });
        zoneNameById.set(id, name);
      });
    }
    this.zones = zones;

    const types = new Map<string, AwsInstanceTypeSpec>();
    for (const [name, spec] of Object.entries(offeringsFile.instanceTypes)) {
      const gpu = 'gpu' in spec ? spec.gpu : undefined;
      types.set(name, {
        name,
        vcpus: spec.vcpus,
        memoryMiB: spec.memoryMiB,
        gpu,
        architecture: ARM_FAMILIES.has(name.split('.')[0] ?? '') ? 'arm64' : 'x86_64',
        maximumEfaInterfaces: EFA_INTERFACES[name] ?? 0,
        burstablePerformance: BURSTABLE_FAMILIES.has(name.split('.')[0] ?? ''),
      });
    }
    this.instanceTypes = types;

    this.offerings = rows.map((row) => {
      const offering: AwsZoneOffering = {
        instanceType: row[0] as string,
        region: row[1] as string,
        zoneId: row[2] as string,
        zone: zoneNameById.get(row[2] as string) ?? '',
        onDemandPrice: (row[3] as number | null) ?? undefined,
        spotPrice: (row[4] as number | null) ?? undefined,
      };
      this.#offeringByTypeAndZone.set(`${offering.instanceType} ${offering.zone}`, offering);
      return offering;
    });
  }

  zonesOf(region: string): AwsAvailabilityZone[] {
    return this.zones.filter((zone) => zone.region === region);
  }

  zone(name: string): AwsAvailabilityZone | undefined {
    return this.zones.find((zone) => zone.name === name);
  }

  offering(instanceType: string, zone: string): AwsZoneOffering | undefined {
    return this.#offeringByTypeAndZone.get(`${instanceType} ${zone}`);
  }

  /** The instance types launchable somewhere in `region`, sorted by name. */
  typesIn(region: string): AwsInstanceTypeSpec[] {
    const names = new Set(
      this.offerings.filter((each) => each.region === region).map((each) => each.instanceType),
    );
    return [...names]
      .sort()
      .map((name) => this.instanceTypes.get(name))
      .filter((spec): spec is AwsInstanceTypeSpec => spec !== undefined);
  }
}
