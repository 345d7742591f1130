/**
 * What dstack offers on Azure: the catalog's Azure rows of the VM series dstack supports, OS disks
 * of 30 GB–4095 GB, and availability from the subscription's resource SKUs (a size the region
 * lists without a location restriction is launchable, else `no_quota`), as dstack's backend.
 */
import type { ComputeManagementClient, ResourceSku } from '@azure/arm-compute';
import type { Range } from '@dstack/core';

/** dstack's supported series (`_SUPPORTED_VM_SERIES_PATTERNS`). */
const SUPPORTED_SERIES = [
  'D(\\d+)s_v6',
  'E(\\d+)i?s_v6',
  'F(\\d+)s_v2',
  'NC(\\d+)s_v3',
  'NC(\\d+)as_T4_v3',
  'ND(\\d+)rs_v2',
  'NV(\\d+)adm?s_A10_v5',
  'NC(\\d+)ads_A100_v4',
  'NC(\\d+)adi?s_H100_v5',
  'ND(\\d+)asr_v4',
  'ND(\\d+)amsr_A100_v4',
  'ND(\\d+)isr_H200_v5',
];
const SUPPORTED_PATTERN = new RegExp(
  `^Standard_(${SUPPORTED_SERIES.map((series) => `(${series})`).join('|')})$`,
);

/** OS disk sizes Azure takes; dstack's images need 30 GB. */
export const AZURE_CONFIGURABLE_DISK_SIZE: Range = { min: 30, max: 4095 };

export function isSupportedVmSize(name: string): boolean {
  return SUPPORTED_PATTERN.test(name);
}

/** A restriction of type `Zone` leaves other zones; any other (`Location`) makes the size unusable there. */
function isAvailable(sku: ResourceSku): boolean {
  const restrictions = sku.restrictions ?? [];
  return restrictions.length === 0 || restrictions[0]?.type === 'Zone';
}

/** The VM sizes the subscription may launch in `location` (resource SKUs). */
export async function launchableSizes(
  compute: ComputeManagementClient,
  location: string,
): Promise<Set<string>> {
  const sizes = new Set<string>();
  for await (const sku of compute.resourceSkus.list({ filter: `location eq '${location}'` })) {
    if (sku.resourceType === 'virtualMachines' && sku.name && isAvailable(sku)) sizes.add(sku.name);
  }
  return sizes;
}
