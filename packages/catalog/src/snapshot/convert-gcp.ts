import type { CatalogItem } from '../catalog-item.js';
import { pythonRound } from '../providers/python-round.js';
import { type ConversionReport, countEvent, createConversionReport } from './conversion-report.js';
import { sortByPrice } from './convert-aws.js';

/** SkyPilot GCP accelerator names → gpuhunt's `accelerator_details` (name, GiB per GPU). */
export const GCP_GPUS: Readonly<Record<string, { name: string; memory: number }>> = {
  A100: { name: 'A100', memory: 40 },
  'A100-80GB': { name: 'A100', memory: 80 },
  B200: { name: 'B200', memory: 180 },
  H100: { name: 'H100', memory: 80 },
  'H100-MEGA': { name: 'H100', memory: 80 },
  // gpuhunt's table has no nvidia-h200-141gb yet; 141 GiB is the knowledge-table size.
  H200: { name: 'H200', memory: 141 },
  K80: { name: 'K80', memory: 12 },
  L4: { name: 'L4', memory: 24 },
  P100: { name: 'P100', memory: 16 },
  P4: { name: 'P4', memory: 8 },
  T4: { name: 'T4', memory: 16 },
  V100: { name: 'V100', memory: 16 },
};

/**
 * gpuhunt's `accelerator_limits`: for GPUs attached to n1 machines, the largest
 * (vCPUs, GiB) an n1 type may have for 1, 2, 4, 8, 16 GPUs (zipped, so a shorter
 * list means fewer counts).
 */
export const GCP_N1_GPU_LIMITS: Readonly<Record<string, ReadonlyArray<readonly [number, number]>>> = {
  K80: [
    [8, 52],
    [16, 104],
    [32, 208],
    [64, 208],
  ],
  P100: [
    [16, 104],
    [32, 208],
    [96, 624],
  ],
  P4: [
    [24, 156],
    [48, 312],
    [96, 624],
  ],
  T4: [
    [48, 312],
    [48, 312],
    [96, 624],
  ],
  V100: [
    [12, 78],
    [24, 156],
    [48, 312],
    [96, 624],
  ],
};
const N1_GPU_COUNTS = [1, 2, 4, 8, 16];

/** gpuhunt's `TPU_HARDWARE_SPECS`: host vCPUs, host GiB and HBM GiB of the whole slice. */
export const TPU_HARDWARE_SPECS: Readonly<Record<string, { cpu: number; memory: number; hbm: number }>> = {
  'v2-8': { cpu: 96, memory: 334, hbm: 64 },
  'v3-8': { cpu: 96, memory: 334, hbm: 128 },
  'v5litepod-1': { cpu: 24, memory: 48, hbm: 16 },
  'v5litepod-4': { cpu: 112, memory: 192, hbm: 64 },
  'v5litepod-8': { cpu: 224, memory: 384, hbm: 128 },
  'v5p-8': { cpu: 208, memory: 448, hbm: 95 },
  'v6e-1': { cpu: 44, memory: 176, hbm: 32 },
  'v6e-4': { cpu: 180, memory: 720, hbm: 128 },
  'v6e-8': { cpu: 180, memory: 1440, hbm: 256 },
};

/**
 * Source prices known to be placeholders, not prices: SkyPilot lists every
 * `tpu-v6e-*` in asia-east1-c at 700.0/700.0 whatever the slice size.
 */
export const GCP_PLACEHOLDER_PRICES: ReadonlyArray<{
  zone: string;
  acceleratorPrefix: string;
  price: number;
}> = [{ zone: 'asia-east1-c', acceleratorPrefix: 'tpu-v6e-', price: 700 }];

/** Built-in GPUs of GCP accelerator-optimized machine types (SkyPilot accelerator name, count). */
export function gcpBuiltInGpus(machineType: string): { accelerator: string; count: number } | undefined {
  const accelerated =
    /^(a2-highgpu|a2-megagpu|a2-ultragpu|a3-highgpu|a3-edgegpu|a3-megagpu|a3-ultragpu)-(\d+)g(?:-nolssd)?$/.exec(
      machineType,
    );
  if (accelerated) {
    const accelerator = {
      'a2-highgpu': 'A100',
      'a2-megagpu': 'A100',
      'a2-ultragpu': 'A100-80GB',
      'a3-highgpu': 'H100',
      'a3-edgegpu': 'H100',
      'a3-megagpu': 'H100-MEGA',
      'a3-ultragpu': 'H200',
    }[accelerated[1] as string] as string;
    return { accelerator, count: Number(accelerated[2]) };
  }
  const g2 = /^g2-standard-(\d+)$/.exec(machineType);
  if (g2) {
    const count = { 24: 2, 48: 4, 96: 8 }[Number(g2[1]) as 24 | 48 | 96] ?? 1;
    return { accelerator: 'L4', count };
  }
  return undefined;
}

interface Price {
  price: number | undefined;
  spotPrice: number | undefined;
}
interface GcpMachine extends Price {
  instanceName: string;
  zone: string;
  cpu: number;
  memory: number;
}

function parseNumber(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

function vmItem(
  machine: GcpMachine,
  gpu: { name: string; memory: number; count: number } | null,
  price: number,
  spot: boolean,
): CatalogItem {
  return {
    provider: 'gcp',
    instanceName: machine.instanceName,
    location: machine.zone,
    price: pythonRound(price, 6),
    cpu: machine.cpu,
    memory: machine.memory,
    gpuCount: gpu?.count ?? 0,
    gpuName: gpu?.name ?? null,
    gpuMemory: gpu?.memory ?? null,
    spot,
    diskSize: null,
    gpuVendor: gpu ? 'nvidia' : null,
    flags: [],
    cpuArch: 'x86',
    providerData: { is_dws_calendar_mode: false },
  };
}

/**
 * Converts SkyPilot GCP rows into the offers gpuhunt's GCP collector yields for the
 * same facts, per zone: accelerator-optimized types priced as VM row + accelerator
 * row of that count, n1 types alone and with every attachable GPU count that fits
 * gpuhunt's limits, and TPU slices of gpuhunt's spec table. An offer needs every
 * part of its price (a spot copy needs every spot part). Sorted by price (stable);
 * gpuhunt's `filter()` is not applied here.
 */
export function convertGcpRows(
  records: readonly Record<string, string>[],
  report: ConversionReport = createConversionReport(),
): CatalogItem[] {
  const machines: GcpMachine[] = [];
  const accelerators = new Map<string, Price>();
  const acceleratorsByZone = new Map<string, Set<string>>();
  const tpuRows: Array<Record<string, string>> = [];

  for (const record of records) {
    const zone = record.AvailabilityZone ?? '';
    const price = parseNumber(record.Price);
    const spotPrice = parseNumber(record.SpotPrice);
    if (record.InstanceType) {
      machines.push({
        instanceName: record.InstanceType,
        zone,
        cpu: Math.trunc(Number(record.vCPUs)),
        // gpuhunt: round(memory_mb / 1024, 1), so n1-standard-1's 3.75 GiB reads 3.8.
        memory: pythonRound(Number(record.MemoryGiB), 1),
        price,
        spotPrice,
      });
      continue;
    }
    const accelerator = record.AcceleratorName ?? '';
    const placeholder = GCP_PLACEHOLDER_PRICES.some(
      (rule) =>
        rule.zone === zone &&
        accelerator.startsWith(rule.acceleratorPrefix) &&
        (price === rule.price || spotPrice === rule.price),
    );
    if (placeholder) {
      countEvent(report, 'gcp: placeholder price 700.0 (tpu-v6e in asia-east1-c) dropped');
      continue;
    }
    if (accelerator.startsWith('tpu-')) {
      tpuRows.push(record);
      continue;
    }
    const count = Math.trunc(Number(record.AcceleratorCount));
    accelerators.set(`${zone}\u0000${accelerator}\u0000${count}`, { price, spotPrice });
    const zoneSet = acceleratorsByZone.get(zone) ?? new Set<string>();
    zoneSet.add(accelerator);
    acceleratorsByZone.set(zone, zoneSet);
  }

  const offers: CatalogItem[] = [];
  const addOffers = (machine: GcpMachine, accelerator?: { sourceName: string; count: number }) => {
    let gpu: { name: string; memory: number; count: number } | null = null;
    let acceleratorPrice: Price = { price: 0, spotPrice: 0 };
    if (accelerator) {
      const details = GCP_GPUS[accelerator.sourceName];
      const row = accelerators.get(
        `${machine.zone}\u0000${accelerator.sourceName}\u0000${accelerator.count}`,
      );
      if (!details || !row) {
        countEvent(report, 'gcp: machine without a matching accelerator price (no offer)');
        return;
      }
      gpu = { ...details, count: accelerator.count };
      acceleratorPrice = row;
    }
    if (machine.price !== undefined && acceleratorPrice.price !== undefined) {
      offers.push(vmItem(machine, gpu, machine.price + acceleratorPrice.price, false));
    } else countEvent(report, 'gcp: missing on-demand price part (no on-demand offer)');
    if (machine.spotPrice !== undefined && acceleratorPrice.spotPrice !== undefined) {
      offers.push(vmItem(machine, gpu, machine.spotPrice + acceleratorPrice.spotPrice, true));
    } else countEvent(report, 'gcp: missing spot price part (no spot offer)');
  };

  // Machine types first, as gpuhunt lists them, then the n1 + GPU variants.
  for (const machine of machines) {
    if (machine.instanceName.startsWith('n1-')) {
      addOffers(machine);
      continue;
    }
    const builtIn = gcpBuiltInGpus(machine.instanceName);
    if (builtIn) addOffers(machine, { sourceName: builtIn.accelerator, count: builtIn.count });
    else countEvent(report, 'gcp: machine type with unknown built-in accelerators (skipped)');
  }
  const n1ByZone = new Map<string, GcpMachine[]>();
  for (const machine of machines) {
    if (!machine.instanceName.startsWith('n1-')) continue;
    const list = n1ByZone.get(machine.zone) ?? [];
    list.push(machine);
    n1ByZone.set(machine.zone, list);
  }
  for (const [zone, zoneMachines] of n1ByZone) {
    for (const [sourceName, limits] of Object.entries(GCP_N1_GPU_LIMITS)) {
      if (!acceleratorsByZone.get(zone)?.has(sourceName)) continue;
      limits.forEach(([maxCpu, maxMemory], index) => {
        const count = N1_GPU_COUNTS[index] as number;
        for (const machine of zoneMachines) {
          if (machine.cpu > maxCpu || machine.memory > maxMemory) continue;
          addOffers(machine, { sourceName, count });
        }
      });
    }
  }

  for (const record of tpuRows) {
    const name = (record.AcceleratorName ?? '').slice('tpu-'.length);
    const spec = TPU_HARDWARE_SPECS[name];
    if (!spec) {
      countEvent(report, 'gcp: TPU slice not in gpuhunt TPU_HARDWARE_SPECS (skipped)');
      continue;
    }
    const price = parseNumber(record.Price);
    if (price === undefined) continue;
    const tpu = (spot: boolean, value: number): CatalogItem => ({
      provider: 'gcp',
      instanceName: name,
      location: record.AvailabilityZone ?? '',
      price: pythonRound(value, 6),
      cpu: spec.cpu,
      memory: spec.memory,
      gpuCount: 1,
      gpuName: name,
      gpuMemory: spec.hbm,
      spot,
      diskSize: null,
      gpuVendor: 'google',
      flags: [],
      cpuArch: 'x86',
      providerData: {},
    });
    offers.push(tpu(false, price));
    const spotPrice = parseNumber(record.SpotPrice);
    if (spotPrice !== undefined) offers.push(tpu(true, spotPrice));
    else countEvent(report, 'gcp: TPU without spot price (no spot offer)');
  }
  return sortByPrice(offers);
}
