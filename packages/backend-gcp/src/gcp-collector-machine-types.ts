/**
 * The machine types gpuhunt's GCP collector prices (`GCPProvider._list_machine_types` and
 * `_make_gpu_machine_types`): every zone of every region, its machine types (deprecated ones
 * skipped, built-in GPUs named), then for each zone's n1 types one variant per attachable GPU
 * and count that fits gpuhunt's per-count CPU and memory limits.
 */
import { pythonRound } from '@dstack/catalog';
import { z } from 'zod';
import { GCP_ACCELERATOR_DETAILS } from './gcp-accelerators.js';
import { type GcpRestSettings, joinUrl, listAllPages } from './gcp-rest.js';

/**
 * gpuhunt's `accelerator_limits`: the largest n1 type (vCPUs, GiB) that takes 1, 2, 4, 8, 16 of
 * each attachable GPU (zipped with the counts, so a shorter list means fewer counts).
 */
export const GCP_N1_ACCELERATOR_LIMITS: Readonly<
  Record<string, ReadonlyArray<{ readonly cpu: number; readonly memory: number }>>
> = {
  'nvidia-tesla-k80': [
    { cpu: 8, memory: 52 },
    { cpu: 16, memory: 104 },
    { cpu: 32, memory: 208 },
    { cpu: 64, memory: 208 },
  ],
  'nvidia-tesla-p100': [
    { cpu: 16, memory: 104 },
    { cpu: 32, memory: 208 },
    { cpu: 96, memory: 624 },
  ],
  'nvidia-tesla-p4': [
    { cpu: 24, memory: 156 },
    { cpu: 48, memory: 312 },
    { cpu: 96, memory: 624 },
  ],
  'nvidia-tesla-t4': [
    { cpu: 48, memory: 312 },
    { cpu: 48, memory: 312 },
    { cpu: 96, memory: 624 },
  ],
  'nvidia-tesla-v100': [
    { cpu: 12, memory: 78 },
    { cpu: 24, memory: 156 },
    { cpu: 48, memory: 312 },
    { cpu: 96, memory: 624 },
  ],
};
const N1_ACCELERATOR_COUNTS = [1, 2, 4, 8, 16];

/** A machine type in a zone, with its GPUs (built in or attached) but no price yet. */
export interface GcpMachineType {
  readonly instanceName: string;
  /** The zone: gpuhunt's GCP offers are per zone. */
  readonly zone: string;
  readonly cpu: number;
  /** GiB rounded to one decimal (gpuhunt: `round(memory_mb / 1024, 1)`). */
  readonly memory: number;
  readonly gpuCount: number;
  /** Compute's accelerator type (`nvidia-tesla-t4`), not yet the catalog's name. */
  readonly acceleratorType: string | null;
}

const RegionSchema = z.object({ name: z.string(), zones: z.array(z.string()).default([]) });
const MachineTypeSchema = z.object({
  name: z.string(),
  guestCpus: z.number(),
  memoryMb: z.number(),
  accelerators: z
    .array(z.object({ guestAcceleratorType: z.string(), guestAcceleratorCount: z.number() }))
    .optional(),
  deprecated: z.object({ state: z.string().optional() }).optional(),
});
const AcceleratorTypeSchema = z.object({ name: z.string() });

function parseItems<T>(schema: z.ZodType<T>, items: unknown[], what: string): T[] {
  return items.map((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    throw new Error(`${what}[${index}].${issue.path.join('.')}: ${issue.message}`);
  });
}

export interface GcpComputeListSettings extends GcpRestSettings {
  /** Compute's base URL, e.g. `https://compute.googleapis.com/compute/v1`. */
  readonly computeUrl: string;
  readonly project: string;
  /** Zones listed at once (gpuhunt: 8 threads). */
  readonly concurrency?: number;
  readonly onProgress?: (message: string) => void;
}

const COMPUTE_PAGE = ['maxResults', 500] as const;

/** The zones of every region of the project, in the order `regions.list` gives them. */
export async function listZones(settings: GcpComputeListSettings): Promise<string[]> {
  const url = joinUrl(settings.computeUrl, `/projects/${encodeURIComponent(settings.project)}/regions`);
  const regions = parseItems(
    RegionSchema,
    await listAllPages(url, { itemsKey: 'items', pageSize: COMPUTE_PAGE }, settings),
    'regions.list items',
  );
  // Zone links end with the zone's name.
  return regions.flatMap((region) => region.zones.map((link) => link.split('/').at(-1) as string));
}

/** Runs `task` on every item, `concurrency` at a time, answers in the items' order. */
async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/**
 * The machine types of one zone. A type whose built-in accelerator gpuhunt does not know (its
 * details table lacks it) is skipped with a warning, as gpuhunt does.
 */
async function listZoneMachineTypes(
  zone: string,
  settings: GcpComputeListSettings,
): Promise<GcpMachineType[]> {
  const url = joinUrl(
    settings.computeUrl,
    `/projects/${encodeURIComponent(settings.project)}/zones/${encodeURIComponent(zone)}/machineTypes`,
  );
  const items = parseItems(
    MachineTypeSchema,
    await listAllPages(url, { itemsKey: 'items', pageSize: COMPUTE_PAGE }, settings),
    `machineTypes.list(${zone}) items`,
  );
  const machineTypes: GcpMachineType[] = [];
  for (const item of items) {
    if (item.deprecated?.state === 'DEPRECATED') continue;
    const accelerator = item.accelerators?.[0];
    if (accelerator && !GCP_ACCELERATOR_DETAILS[accelerator.guestAcceleratorType]) {
      settings.onProgress?.(
        `gcp: warning: unknown accelerator type ${accelerator.guestAcceleratorType} of ${item.name} in ${zone}; skipped`,
      );
      continue;
    }
    machineTypes.push({
      instanceName: item.name,
      zone,
      cpu: item.guestCpus,
      // gpuhunt: round(memory_mb / 1024, 1), so n1-standard-1's 3.75 GiB reads 3.8.
      memory: pythonRound(item.memoryMb / 1024, 1),
      gpuCount: accelerator?.guestAcceleratorCount ?? 0,
      acceleratorType: accelerator?.guestAcceleratorType ?? null,
    });
  }
  return machineTypes;
}

/** Every zone's machine types, zone by zone in `zones` order. */
export async function listMachineTypes(
  zones: readonly string[],
  settings: GcpComputeListSettings,
): Promise<GcpMachineType[]> {
  const perZone = await mapConcurrently(zones, settings.concurrency ?? 8, (zone) =>
    listZoneMachineTypes(zone, settings),
  );
  return perZone.flat();
}

/**
 * The n1 + GPU variants: for each zone with n1 types, each accelerator type the zone lists that
 * n1 takes (`GCP_N1_ACCELERATOR_LIMITS`), each count, each n1 type within that count's limits.
 */
export async function listN1GpuVariants(
  machineTypes: readonly GcpMachineType[],
  settings: GcpComputeListSettings,
): Promise<GcpMachineType[]> {
  const n1ByZone = new Map<string, GcpMachineType[]>();
  for (const machineType of machineTypes) {
    if (!machineType.instanceName.startsWith('n1-')) continue;
    const list = n1ByZone.get(machineType.zone) ?? [];
    list.push(machineType);
    n1ByZone.set(machineType.zone, list);
  }
  const perZone = await mapConcurrently([...n1ByZone], settings.concurrency ?? 8, async ([zone, n1Types]) => {
    const url = joinUrl(
      settings.computeUrl,
      `/projects/${encodeURIComponent(settings.project)}/zones/${encodeURIComponent(zone)}/acceleratorTypes`,
    );
    const accelerators = parseItems(
      AcceleratorTypeSchema,
      await listAllPages(url, { itemsKey: 'items', pageSize: COMPUTE_PAGE }, settings),
      `acceleratorTypes.list(${zone}) items`,
    );
    const variants: GcpMachineType[] = [];
    for (const { name } of accelerators) {
      const limits = GCP_N1_ACCELERATOR_LIMITS[name];
      if (!limits) continue;
      limits.forEach((limit, index) => {
        const count = N1_ACCELERATOR_COUNTS[index] as number;
        for (const machineType of n1Types) {
          if (machineType.cpu > limit.cpu || machineType.memory > limit.memory) continue;
          variants.push({ ...machineType, gpuCount: count, acceleratorType: name });
        }
      });
    }
    return variants;
  });
  return perZone.flat();
}
