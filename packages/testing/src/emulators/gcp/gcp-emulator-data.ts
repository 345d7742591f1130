/**
 * What the emulated Compute Engine project offers: regions, their zones, machine types (with
 * their built-in GPUs), accelerator types per zone, and per-zone on-demand and spot prices. The
 * data comes from the GCP rows of the catalog's snapshot data
 * (`__fixtures__/gcp-machine-offerings.json`, rebuilt by `scripts/build-gcp-emulator-data.mjs`),
 * so the emulator sells what the catalog lists.
 */
import offeringsFile from './__fixtures__/gcp-machine-offerings.json' with { type: 'json' };

export interface GcpMachineTypeSpec {
  readonly name: string;
  readonly vcpus: number;
  readonly memoryMb: number;
  /** The GPUs built into the type (a2, a3, g2); N1 types take `guestAccelerators` instead. */
  readonly accelerators: { readonly type: string; readonly count: number } | undefined;
}

export interface GcpAcceleratorSpec {
  /** Compute Engine's accelerator type, e.g. `nvidia-tesla-t4`. */
  readonly type: string;
  /** The catalog's GPU name, e.g. `T4`. */
  readonly gpuName: string;
  readonly memoryMiB: number;
}

/** One machine type a zone has, with the VM's prices (CPU and RAM only) in USD per hour. */
export interface GcpMachineOffering {
  readonly machineType: string;
  readonly region: string;
  readonly zone: string;
  readonly onDemandPrice: number | undefined;
  readonly spotPrice: number | undefined;
}

/** `count` accelerators of one type in a zone, with the price of that many in USD per hour. */
export interface GcpAcceleratorOffering {
  readonly acceleratorType: string;
  readonly count: number;
  readonly region: string;
  readonly zone: string;
  readonly onDemandPrice: number | undefined;
  readonly spotPrice: number | undefined;
}

export interface GcpZone {
  readonly name: string;
  readonly region: string;
}

/** The regions of the catalog's GCP extract: every one by default. */
export const DEFAULT_GCP_EMULATOR_REGIONS: readonly string[] = [
  'us-central1',
  'us-east1',
  'us-west1',
  'europe-west4',
  'asia-east1',
];

/** `us-central1-a` → `us-central1`, as GCP names zones. */
export function regionOfZone(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

export class GcpEmulatorData {
  readonly regions: readonly string[];
  readonly zones: readonly GcpZone[];
  readonly machineTypes: ReadonlyMap<string, GcpMachineTypeSpec>;
  readonly accelerators: ReadonlyMap<string, GcpAcceleratorSpec>;
  readonly machineOfferings: readonly GcpMachineOffering[];
  readonly acceleratorOfferings: readonly GcpAcceleratorOffering[];

  constructor(regions: readonly string[] = DEFAULT_GCP_EMULATOR_REGIONS) {
    const known = new Set(offeringsFile.machineOfferings.map((row) => regionOfZone(row[1] as string)));
    regions.forEach((region, index) => {
      if (!known.has(region)) {
        throw new Error(
          `regions[${index}]: the GCP emulator has no data for region ${JSON.stringify(region)}; known: ${[...known].sort().join(', ')}`,
        );
      }
    });
    this.regions = [...regions];
    const wanted = new Set(regions);

    const machineTypes = new Map<string, GcpMachineTypeSpec>();
    for (const [name, spec] of Object.entries(offeringsFile.machineTypes)) {
      machineTypes.set(name, {
        name,
        vcpus: spec.vcpus,
        memoryMb: spec.memoryMb,
        accelerators: 'accelerators' in spec ? spec.accelerators : undefined,
      });
    }
    this.machineTypes = machineTypes;
    const accelerators = new Map<string, GcpAcceleratorSpec>();
    for (const [type, spec] of Object.entries(offeringsFile.accelerators)) {
      accelerators.set(type, { type, gpuName: spec.name, memoryMiB: spec.memoryMiB });
    }
    this.accelerators = accelerators;

    this.machineOfferings = offeringsFile.machineOfferings
      .map((row) => ({
        machineType: row[0] as string,
        zone: row[1] as string,
        region: regionOfZone(row[1] as string),
        onDemandPrice: (row[2] as number | null) ?? undefined,
        spotPrice: (row[3] as number | null) ?? undefined,
      }))
      .filter((each) => wanted.has(each.region));
    this.acceleratorOfferings = offeringsFile.acceleratorOfferings
      .map((row) => ({
        acceleratorType: row[0] as string,
        count: row[1] as number,
        zone: row[2] as string,
        region: regionOfZone(row[2] as string),
        onDemandPrice: (row[3] as number | null) ?? undefined,
        spotPrice: (row[4] as number | null) ?? undefined,
      }))
      .filter((each) => wanted.has(each.region));

    const zoneNames = new Set([
      ...this.machineOfferings.map((each) => each.zone),
      ...this.acceleratorOfferings.map((each) => each.zone),
    ]);
    this.zones = [...zoneNames].sort().map((name) => ({ name, region: regionOfZone(name) }));
  }

  zone(name: string): GcpZone | undefined {
    return this.zones.find((zone) => zone.name === name);
  }

  zonesOf(region: string): GcpZone[] {
    return this.zones.filter((zone) => zone.region === region);
  }

  /** The machine types a zone has, sorted by name. */
  machineTypesIn(zone: string): GcpMachineTypeSpec[] {
    return this.machineOfferings
      .filter((each) => each.zone === zone)
      .map((each) => this.machineTypes.get(each.machineType))
      .filter((spec): spec is GcpMachineTypeSpec => spec !== undefined)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  machineOffering(machineType: string, zone: string): GcpMachineOffering | undefined {
    return this.machineOfferings.find((each) => each.machineType === machineType && each.zone === zone);
  }

  /** The accelerator types a zone has, with the most cards one instance takes. */
  acceleratorTypesIn(zone: string): { spec: GcpAcceleratorSpec; maximumCardsPerInstance: number }[] {
    const maximum = new Map<string, number>();
    for (const each of this.acceleratorOfferings) {
      if (each.zone !== zone) continue;
      maximum.set(each.acceleratorType, Math.max(maximum.get(each.acceleratorType) ?? 0, each.count));
    }
    return [...maximum]
      .sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([type, count]) => {
        const spec = this.accelerators.get(type);
        return spec ? [{ spec, maximumCardsPerInstance: count }] : [];
      });
  }
}
