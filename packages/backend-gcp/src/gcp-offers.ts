/**
 * What dstack offers on GCP: the catalog's GCP rows (one per zone) with NVIDIA GPUs or none (TPUs
 * need the TPU API, not Compute), collapsed into one offer per region with its zones kept
 * cheapest first, disks of 20 GB–32 TB, and availability from the region's GPU quotas: an offer
 * whose GPUs do not fit in `limit - usage` of its metric is `no_quota`.
 */
import type { InstanceOffer, InstanceOfferWithAvailability, Range } from '@dstack/core';
import { withAvailability } from '@dstack/core';
import { acceleratorTypeOf, gpuQuotaMetric } from './gcp-accelerators.js';

/** The boot disk sizes Compute Engine takes (GB). */
export const GCP_CONFIGURABLE_DISK_SIZE: Range = { min: 20, max: 32 * 1024 };

/** `us-central1-a` → `us-central1`. */
export function regionOfZone(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

/** Offers this backend can launch: CPU-only or NVIDIA GPUs (TPU rows go through another API). */
export function isSupportedOffer(offer: InstanceOffer): boolean {
  const gpus = offer.instance.resources.gpus;
  return gpus.length === 0 || gpus.every((gpu) => gpu.vendor === 'nvidia');
}

/**
 * One offer per (machine type, GPUs, spot, region) from the per-zone catalog offers (given
 * cheapest first): the cheapest zone's price, `region` the zones' region, and the zones in
 * price order in `availability_zones`.
 */
export function collapseZones(offers: readonly InstanceOffer[]): { offer: InstanceOffer; zones: string[] }[] {
  const byKey = new Map<string, { offer: InstanceOffer; zones: string[] }>();
  for (const offer of offers) {
    const zone = offer.region;
    const region = regionOfZone(zone);
    const { name, resources } = offer.instance;
    const gpu = resources.gpus[0];
    const key = [name, resources.spot, region, resources.gpus.length, gpu?.name, gpu?.memory_mib].join('|');
    const seen = byKey.get(key);
    if (seen) {
      if (!seen.zones.includes(zone)) seen.zones.push(zone);
      continue;
    }
    byKey.set(key, { offer: { ...offer, region }, zones: [zone] });
  }
  return [...byKey.values()];
}

/** One quota of a region, as `regions.list` gives it. */
export interface GcpQuota {
  readonly metric: string;
  readonly limit: number;
  readonly usage: number;
}

/**
 * The offer with its availability: GPU offers are `no_quota` when the region's quota of their
 * metric (unknown metrics count as 0, as in dstack) leaves fewer GPUs free than they need;
 * without the region's quotas, and for CPU-only offers, `available`.
 */
export function offerWithQuota(
  offer: InstanceOffer,
  zones: string[],
  quotas: ReadonlyMap<string, GcpQuota> | undefined,
): InstanceOfferWithAvailability {
  const gpus = offer.instance.resources.gpus;
  const gpu = gpus[0];
  let availability: 'available' | 'no_quota' = 'available';
  if (gpu && quotas) {
    const metric = gpuQuotaMetric(acceleratorTypeOf(gpu, offer.instance.name), offer.instance.resources.spot);
    const quota = quotas.get(metric);
    const free = quota ? quota.limit - quota.usage : 0;
    if (free < gpus.length) availability = 'no_quota';
  }
  return withAvailability(offer, availability, { availability_zones: zones });
}
