import type { CatalogItem } from '../catalog-item.js';

/**
 * Instance-type prefixes gpuhunt's `AWSProvider.filter()` publishes (gpuhunt HEAD
 * 3584151). Everything else (inf*, trn*, f1/f2, dl*, g4ad, g5g, p3, r5…) is
 * collected but never reaches the published catalog.
 */
export const AWS_PUBLISHED_PREFIXES: readonly string[] = [
  'm7i.',
  'c7i.',
  'r7i.',
  't3.',
  't2.small',
  'c5.',
  'm5.',
  'p6-b300.',
  'p6-b200.',
  'p5.',
  'p5e.',
  'p5en.',
  'p4d.',
  'p4de.',
  'g7.',
  'g7e.',
  'g6.',
  'g6e.',
  'gr6.',
  'g5.',
  'g4dn.',
];

/** gpuhunt's `AWSProvider.filter()`: keeps the rows whose instance type starts with a published prefix. */
export function filterAwsOffers(items: readonly CatalogItem[]): CatalogItem[] {
  return items.filter((item) =>
    AWS_PUBLISHED_PREFIXES.some((prefix) => item.instanceName.startsWith(prefix)),
  );
}

/** CPU machine-type prefixes gpuhunt's `GCPProvider.filter()` publishes even without GPUs. */
export const GCP_PUBLISHED_PREFIXES: readonly string[] = [
  'm4-',
  'c4-',
  'n4-',
  'h3-',
  'n2-',
  'e2-medium',
  'e2-standard-',
  'e2-highmem-',
  'e2-highcpu-',
  'm1-',
  'a2-',
  'g2-',
];

/** GPUs gpuhunt's GCP filter drops wherever they appear. */
export const GCP_DROPPED_GPUS: readonly string[] = ['K80', 'P4'];

/**
 * gpuhunt's `GCPProvider.filter()`: the published prefixes or any accelerator except
 * K80/P4 (TPUs included), minus on-demand rows of machine types GCP sells only as
 * spot or DWS calendar mode (a4x, a4, a3-ultragpu, and a3-highgpu below 8 GPUs).
 */
export function filterGcpOffers(items: readonly CatalogItem[]): CatalogItem[] {
  return items.filter((item) => {
    const published =
      GCP_PUBLISHED_PREFIXES.some((prefix) => item.instanceName.startsWith(prefix)) ||
      (item.gpuName !== null && !GCP_DROPPED_GPUS.includes(item.gpuName));
    if (!published) return false;
    const onDemandOnlyReservable =
      !item.spot &&
      item.providerData.is_dws_calendar_mode !== true &&
      (item.instanceName.startsWith('a4x-') ||
        item.instanceName.startsWith('a4-') ||
        item.instanceName.startsWith('a3-ultragpu-') ||
        (item.instanceName.startsWith('a3-highgpu-') && item.gpuCount < 8));
    return !onDemandOnlyReservable;
  });
}
