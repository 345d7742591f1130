import type { CatalogItem } from '../catalog-item.js';
import type { AcceleratorVendor } from '../gpus/known-accelerators.js';

/** One broken expectation; `check` names the rule, `index` points into the checked list. */
export interface IntegrityProblem {
  readonly check: string;
  readonly message: string;
  readonly index?: number;
}

/** A family whose price must grow with the GPU count (per location and spot/on-demand). */
export interface PriceScalingExpectation {
  /** Instance-name prefix, for example `a2-highgpu-` or `g6.`. */
  readonly family: string;
  /**
   * When set, the price per GPU of every count must stay within this factor of the
   * 1-GPU price (1.25 allows ±25 %); use for families whose CPU and RAM grow with the GPUs.
   */
  readonly proportionalWithin?: number;
  /** Check spot offers too; off by default, as spot markets move per instance type. */
  readonly includeSpot?: boolean;
}

/**
 * What a catalog must hold beyond the per-row rules, after gpuhunt's integrity tests
 * (`src/integrity_tests/`). Every field is optional.
 */
export interface IntegrityExpectations {
  /** At least one spot and one on-demand offer. Default: true. */
  readonly spotAndOnDemand?: boolean;
  /** GPU names that must appear (case-sensitive, as published), optionally of one vendor. */
  readonly gpuNames?: readonly string[];
  readonly gpuNamesVendor?: AcceleratorVendor;
  /** For each GPU name, the exact set of per-GPU memory sizes (A100 → [40, 80]). */
  readonly gpuMemories?: Readonly<Record<string, readonly number[]>>;
  /** GPU-name prefixes that must each match at least one offer (TPUs: `v2-`, `v5p-`…). */
  readonly gpuNamePrefixes?: readonly string[];
  /** Instance types that must be offered in each listed location (gpuhunt: m5.large in every region). */
  readonly instancesInLocations?: Readonly<Record<string, readonly string[]>>;
  readonly priceScaling?: readonly PriceScalingExpectation[];
  /**
   * Largest share of (type, location) pairs whose spot price exceeds the on-demand
   * price; spot markets do cross on-demand now and then. Default: 0.05.
   */
  readonly maxSpotAboveOnDemandShare?: number;
  /** Rows must be sorted by price, as gpuhunt writes them. Default: true. */
  readonly sortedByPrice?: boolean;
}

/** A (type, location) pair whose spot price is above its on-demand price. */
export interface SpotAboveOnDemand {
  readonly instanceName: string;
  readonly location: string;
  readonly spotPrice: number;
  readonly onDemandPrice: number;
}

const isSet = (value: string | null | undefined): value is string =>
  typeof value === 'string' && value !== '';

/** gpuhunt's per-offer rules (`OffersIntegrityTests`), one problem per broken rule and row. */
export function checkOfferRules(items: readonly CatalogItem[]): IntegrityProblem[] {
  const problems: IntegrityProblem[] = [];
  items.forEach((item, index) => {
    const at = `${item.instanceName || '?'} @ ${item.location || '?'}${item.spot ? ' (spot)' : ''}`;
    const problem = (check: string, message: string) =>
      problems.push({ check, message: `${at}: ${message}`, index });
    if (!isSet(item.instanceName)) problem('name', 'instance name is empty');
    if (!isSet(item.location)) problem('location', 'location is empty');
    if (!(item.price > 0)) problem('price', `price ${item.price} is not > 0`);
    if (!(item.cpu > 0)) problem('cpu', `cpu ${item.cpu} is not > 0`);
    if (!(item.memory > 0)) problem('memory', `memory ${item.memory} is not > 0`);
    if (item.diskSize !== null && !(item.diskSize > 0))
      problem('disk', `disk ${item.diskSize} is neither null nor > 0`);
    if (item.gpuCount > 0) {
      if (!isSet(item.gpuName)) problem('gpu', 'gpu_count > 0 without gpu_name');
      if (!(item.gpuMemory !== null && item.gpuMemory > 0))
        problem('gpu', 'gpu_count > 0 without gpu_memory > 0');
      if (!isSet(item.gpuVendor)) problem('gpu', 'gpu_count > 0 without gpu_vendor');
    } else if (item.gpuCount === 0) {
      if (item.gpuName !== null || item.gpuMemory !== null || item.gpuVendor !== null)
        problem('gpu', 'gpu_count 0 with gpu_name, gpu_memory or gpu_vendor set');
    } else problem('gpu', `gpu_count ${item.gpuCount} is negative`);
  });
  return problems;
}

/** Every (type, location) pair whose cheapest spot offer costs more than its cheapest on-demand one. */
export function findSpotAboveOnDemand(items: readonly CatalogItem[]): {
  pairs: number;
  exceptions: SpotAboveOnDemand[];
} {
  const cheapest = new Map<
    string,
    { instanceName: string; location: string; spot?: number; onDemand?: number }
  >();
  for (const item of items) {
    const key = `${item.instanceName}\u0000${item.location}`;
    const entry = cheapest.get(key) ?? { instanceName: item.instanceName, location: item.location };
    const field = item.spot ? 'spot' : 'onDemand';
    entry[field] = Math.min(entry[field] ?? Number.POSITIVE_INFINITY, item.price);
    cheapest.set(key, entry);
  }
  let pairs = 0;
  const exceptions: SpotAboveOnDemand[] = [];
  for (const entry of cheapest.values()) {
    if (entry.spot === undefined || entry.onDemand === undefined) continue;
    pairs += 1;
    if (entry.spot > entry.onDemand)
      exceptions.push({
        instanceName: entry.instanceName,
        location: entry.location,
        spotPrice: entry.spot,
        onDemandPrice: entry.onDemand,
      });
  }
  return { pairs, exceptions };
}

/** Checks that the cheapest offer per GPU count of a family rises with the count, per location (and market). */
export function checkPriceScaling(
  items: readonly CatalogItem[],
  expectation: PriceScalingExpectation,
): IntegrityProblem[] {
  const groups = new Map<string, Map<number, number>>();
  for (const item of items) {
    if (!item.instanceName.startsWith(expectation.family) || item.gpuCount <= 0) continue;
    if (item.spot && !expectation.includeSpot) continue;
    const key = `${item.location}${item.spot ? ' (spot)' : ''}`;
    const byCount = groups.get(key) ?? new Map<number, number>();
    byCount.set(item.gpuCount, Math.min(byCount.get(item.gpuCount) ?? Number.POSITIVE_INFINITY, item.price));
    groups.set(key, byCount);
  }
  const problems: IntegrityProblem[] = [];
  if (groups.size === 0) {
    return [{ check: 'price-scaling', message: `no GPU offers of family ${expectation.family}` }];
  }
  for (const [where, byCount] of groups) {
    const counts = [...byCount.keys()].sort((a, b) => a - b);
    for (let i = 1; i < counts.length; i++) {
      const smaller = counts[i - 1] as number;
      const larger = counts[i] as number;
      if ((byCount.get(larger) as number) <= (byCount.get(smaller) as number))
        problems.push({
          check: 'price-scaling',
          message: `${expectation.family} ${where}: ${larger} GPUs cost ${byCount.get(larger)}, not more than ${smaller} GPUs (${byCount.get(smaller)})`,
        });
    }
    const single = byCount.get(1);
    if (expectation.proportionalWithin && single !== undefined) {
      for (const count of counts) {
        const ratio = (byCount.get(count) as number) / count / single;
        if (ratio > expectation.proportionalWithin || ratio < 1 / expectation.proportionalWithin)
          problems.push({
            check: 'price-scaling',
            message: `${expectation.family} ${where}: price per GPU at ${count} GPUs is ${ratio.toFixed(3)}× the 1-GPU price`,
          });
      }
    }
  }
  return problems;
}

/**
 * gpuhunt-style integrity checks over one provider's offers: the per-row rules of
 * gpuhunt's `OffersIntegrityTests` plus the catalog-level expectations given.
 * Returns the problems found; an empty list means the catalog passes.
 */
export function checkCatalogIntegrity(
  items: readonly CatalogItem[],
  expectations: IntegrityExpectations = {},
): IntegrityProblem[] {
  if (items.length === 0) return [{ check: 'non-empty', message: 'the catalog has no offers' }];
  const problems = checkOfferRules(items);

  if (expectations.spotAndOnDemand ?? true) {
    if (!items.some((item) => item.spot)) problems.push({ check: 'spot', message: 'no spot offers' });
    if (!items.some((item) => !item.spot))
      problems.push({ check: 'on-demand', message: 'no on-demand offers' });
  }

  if (expectations.gpuNames) {
    const vendor = expectations.gpuNamesVendor;
    const present = new Set(
      items
        .filter((item) => item.gpuCount > 0 && (!vendor || item.gpuVendor === vendor))
        .map((item) => item.gpuName),
    );
    const missing = expectations.gpuNames.filter((name) => !present.has(name));
    if (missing.length > 0)
      problems.push({
        check: 'gpu-names',
        message: `missing${vendor ? ` ${vendor}` : ''} GPUs: ${missing.join(', ')}`,
      });
  }

  for (const [name, expected] of Object.entries(expectations.gpuMemories ?? {})) {
    const actual = [
      ...new Set(items.filter((item) => item.gpuName === name).map((item) => item.gpuMemory as number)),
    ].sort((a, b) => a - b);
    const wanted = [...expected].sort((a, b) => a - b);
    if (actual.join(',') !== wanted.join(','))
      problems.push({
        check: 'gpu-memory',
        message: `${name} memories are [${actual}], expected [${wanted}]`,
      });
  }

  for (const prefix of expectations.gpuNamePrefixes ?? []) {
    if (!items.some((item) => item.gpuName?.startsWith(prefix)))
      problems.push({ check: 'gpu-name-prefix', message: `no GPU name starts with ${prefix}` });
  }

  for (const [instanceName, locations] of Object.entries(expectations.instancesInLocations ?? {})) {
    const offered = new Set(
      items.filter((item) => item.instanceName === instanceName).map((item) => item.location),
    );
    const missing = locations.filter((location) => !offered.has(location));
    if (missing.length > 0)
      problems.push({
        check: 'instance-locations',
        message: `${instanceName} missing in ${missing.join(', ')}`,
      });
  }

  for (const scaling of expectations.priceScaling ?? []) problems.push(...checkPriceScaling(items, scaling));

  const { pairs, exceptions } = findSpotAboveOnDemand(items);
  const maxShare = expectations.maxSpotAboveOnDemandShare ?? 0.05;
  if (pairs > 0 && exceptions.length / pairs > maxShare)
    problems.push({
      check: 'spot-below-on-demand',
      message: `${exceptions.length} of ${pairs} (type, location) pairs have spot above on-demand (allowed share ${maxShare})`,
    });

  if (expectations.sortedByPrice ?? true) {
    const unsorted = items.findIndex(
      (item, index) => index > 0 && item.price < (items[index - 1] as CatalogItem).price,
    );
    if (unsorted > 0)
      problems.push({
        check: 'sorted',
        message: `row ${unsorted} is cheaper than the row before it`,
        index: unsorted,
      });
  }
  return problems;
}
