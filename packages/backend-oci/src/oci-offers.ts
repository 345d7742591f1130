/**
 * What dstack offers on OCI: the catalog's `oci` rows of dstack's supported shape families (no
 * flexible shapes), boot volumes of 50 GB–32 TB, and availability as dstack's
 * `get_all_offers_with_availability`: a shape the compartment may use in a region (ListShapes of
 * each availability domain) whose capacity report says AVAILABLE in some domain is `available`
 * there (those domains its zones); within quota but out of capacity everywhere `not_available`;
 * else `no_quota`.
 */
import type { InstanceAvailability, Range } from '@dstack/core';
import { listAll, type OciRegionClients } from './oci-clients.js';

/** dstack's `SUPPORTED_SHAPE_FAMILIES`. */
const SUPPORTED_SHAPE_FAMILIES = [
  'VM.Standard2.',
  'BM.Standard2.',
  'BM.Standard3.',
  'BM.Standard.E3.',
  'BM.Standard.E4.',
  'BM.Standard.E5.',
  'BM.Optimized3.',
  'VM.GPU3.',
  'BM.GPU3.',
  'BM.GPU4.',
  'VM.GPU.A10.',
  'BM.GPU.A10.',
];

/** dstack's `CONFIGURABLE_DISK_SIZE` (GB). */
export const OCI_CONFIGURABLE_DISK_SIZE: Range = { min: 50, max: 32 * 1024 };

/** The capacity report takes at most this many shapes (found by dstack by experiment). */
const CAPACITY_REPORT_MAX_SHAPES = 10;

export function isSupportedShape(name: string): boolean {
  return !name.includes('Flex') && SUPPORTED_SHAPE_FAMILIES.some((family) => name.startsWith(family));
}

/** One region's shapes: the domains each is within quota in, and those it has capacity in. */
export interface RegionShapes {
  /** Shape → availability domains where the compartment may launch it. */
  readonly quota: ReadonlyMap<string, readonly string[]>;
  /** Shape → availability domains where its capacity report says AVAILABLE. */
  readonly available: ReadonlyMap<string, readonly string[]>;
}

function add(map: Map<string, string[]>, key: string, value: string): void {
  const values = map.get(key) ?? [];
  values.push(value);
  map.set(key, values);
}

/** Lists the region's domains, their shapes, and the capacity of `shapes` (the offers') in each. */
export async function regionShapes(
  clients: OciRegionClients,
  tenancy: string,
  compartmentId: string,
  shapes: ReadonlySet<string>,
): Promise<RegionShapes> {
  const quota = new Map<string, string[]>();
  const available = new Map<string, string[]>();
  const { items: domains } = await clients.identity.listAvailabilityDomains({ compartmentId: tenancy });
  for (const domain of domains) {
    const name = domain.name ?? '';
    const allowed = await listAll((page) =>
      clients.compute.listShapes({
        compartmentId,
        availabilityDomain: name,
        limit: 100,
        page,
      }),
    );
    const toCheck = [...new Set(allowed.map((shape) => shape.shape))].filter((shape) => shapes.has(shape));
    for (const shape of toCheck) add(quota, shape, name);
    for (let start = 0; start < toCheck.length; start += CAPACITY_REPORT_MAX_SHAPES) {
      const chunk = toCheck.slice(start, start + CAPACITY_REPORT_MAX_SHAPES);
      const { computeCapacityReport } = await clients.compute.createComputeCapacityReport({
        createComputeCapacityReportDetails: {
          compartmentId,
          availabilityDomain: name,
          shapeAvailabilities: chunk.map((instanceShape) => ({ instanceShape })),
        },
      });
      for (const item of computeCapacityReport.shapeAvailabilities) {
        if (String(item.availabilityStatus) === 'AVAILABLE' && item.instanceShape)
          add(available, item.instanceShape, name);
      }
    }
  }
  return { quota, available };
}

export function shapeAvailability(
  shapes: RegionShapes | undefined,
  shape: string,
): { availability: InstanceAvailability; zones: string[] } {
  if (!shapes) return { availability: 'unknown', zones: [] };
  const zones = shapes.available.get(shape);
  if (zones && zones.length > 0) return { availability: 'available', zones: [...zones] };
  return { availability: shapes.quota.has(shape) ? 'not_available' : 'no_quota', zones: [] };
}
