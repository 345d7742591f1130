/**
 * dstack's `gpus/list` (`dstack offer --group-by gpu`): the GPUs of the offers a run spec would
 * get, one row per GPU type (name, memory, vendor) and per group (`backend`, `region` with
 * `backend`, `count`), each with its availabilities, spot kinds, count range and per-GPU price
 * range, sorted as dstack sorts them (available first, then cheapest).
 */
import { type InstanceOfferWithAvailability, type RunSpec, ServerClientError } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { ProjectsTable, UsersTable } from '../db/schema.js';
import { getRunPlan } from './run-plan.js';

export const GPU_GROUP_FIELDS = ['backend', 'region', 'count'] as const;
export type GpuGroupField = (typeof GPU_GROUP_FIELDS)[number];

/** dstack's `GpuGroup`. */
export type GpuGroup = {
  name: string;
  memory_mib: number;
  vendor: string;
  availability: string[];
  spot: Array<'spot' | 'on-demand'>;
  count: { min: number; max: number };
  price: { min: number; max: number };
  backends?: string[];
  backend?: string;
  regions?: string[];
  region?: string;
};

/** Every offer the plan would consider: far more than a plan shows. */
const ALL_OFFERS = 1000;

/** The availabilities dstack counts as "can be had now". */
const AVAILABLE = new Set(['unknown', 'available', 'idle']);

/** One GPU type of one offer: how many of it the offer has. */
interface OfferGpu {
  offer: InstanceOfferWithAvailability;
  name: string;
  memoryMib: number;
  vendor: string;
  count: number;
}

function offerGpus(offers: readonly InstanceOfferWithAvailability[]): OfferGpu[] {
  return offers.flatMap((offer) => {
    const byType = new Map<string, OfferGpu>();
    for (const gpu of offer.instance.resources.gpus) {
      const key = `${gpu.name}\u0000${gpu.memory_mib}\u0000${gpu.vendor}`;
      const entry = byType.get(key) ?? {
        offer,
        name: gpu.name,
        memoryMib: gpu.memory_mib,
        vendor: gpu.vendor,
        count: 0,
      };
      entry.count += 1;
      byType.set(key, entry);
    }
    return [...byType.values()];
  });
}

/** Groups the offers' GPUs as dstack does for `groupBy`; throws for `region` without `backend`. */
export function groupGpus(
  offers: readonly InstanceOfferWithAvailability[],
  groupBy: readonly GpuGroupField[],
): GpuGroup[] {
  const by = new Set(groupBy);
  if (by.has('region') && !by.has('backend')) {
    throw new ServerClientError("Cannot group by 'region' without also grouping by 'backend'", {
      fields: [['group_by']],
    });
  }
  const regionsOfBackend = new Map<string, Set<string>>();
  for (const offer of offers) {
    const regions = regionsOfBackend.get(offer.backend) ?? new Set<string>();
    regions.add(offer.region);
    regionsOfBackend.set(offer.backend, regions);
  }
  const rows = new Map<string, GpuGroup>();
  for (const gpu of offerGpus(offers)) {
    const { offer } = gpu;
    const key = [
      gpu.name,
      gpu.memoryMib,
      gpu.vendor,
      by.has('backend') ? offer.backend : '',
      by.has('region') ? offer.region : '',
      by.has('count') ? gpu.count : '',
    ].join('\u0000');
    const perGpuPrice = offer.price / gpu.count;
    const spot = offer.instance.resources.spot ? 'spot' : 'on-demand';
    const row = rows.get(key);
    if (!row) {
      rows.set(key, {
        name: gpu.name,
        memory_mib: gpu.memoryMib,
        vendor: gpu.vendor,
        availability: [offer.availability],
        spot: [spot],
        count: { min: gpu.count, max: gpu.count },
        price: { min: perGpuPrice, max: perGpuPrice },
        ...(by.has('backend') ? { backend: offer.backend } : { backends: [offer.backend] }),
        ...(by.has('region')
          ? { region: offer.region }
          : by.has('backend')
            ? { regions: [...(regionsOfBackend.get(offer.backend) ?? [])].sort() }
            : {}),
      });
      continue;
    }
    if (!row.availability.includes(offer.availability)) row.availability.push(offer.availability);
    if (!row.spot.includes(spot)) row.spot.push(spot);
    if (row.backends && !row.backends.includes(offer.backend)) row.backends.push(offer.backend);
    row.count = { min: Math.min(row.count.min, gpu.count), max: Math.max(row.count.max, gpu.count) };
    row.price = { min: Math.min(row.price.min, perGpuPrice), max: Math.max(row.price.max, perGpuPrice) };
  }
  const sortKey = (row: GpuGroup): Array<number | string> => [
    row.availability.some((availability) => AVAILABLE.has(availability)) ? 0 : 1,
    row.price.min,
    row.price.max,
    row.backend ?? '',
    row.region ?? '',
    by.has('count') ? row.count.min : 0,
    row.name,
    row.memory_mib,
  ];
  return [...rows.values()].sort((a, b) => {
    const left = sortKey(a);
    const right = sortKey(b);
    for (let index = 0; index < left.length; index += 1) {
      if (left[index]! < right[index]!) return -1;
      if (left[index]! > right[index]!) return 1;
    }
    return 0;
  });
}

/** `gpus/list`: the GPUs of the offers `runSpec` would get, grouped. */
export async function listGpus(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  runSpec: RunSpec,
  groupBy: readonly GpuGroupField[],
): Promise<{ gpus: GpuGroup[] }> {
  const plan = await getRunPlan(app, project, user, runSpec, ALL_OFFERS, { forOffersOnly: true });
  const offers = plan.job_plans[0]?.offers ?? [];
  return { gpus: groupGpus(offers, groupBy) };
}
