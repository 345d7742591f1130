/**
 * EC2's vCPU quotas: every instance family belongs to a class (Standard, G and VT, P, …), and
 * the running vCPUs of a class in a region may not exceed its quota, one quota for on-demand and
 * one for spot. The quota codes are the Service Quotas codes dstack and gpuhunt read.
 */

export type AwsMarket = 'on-demand' | 'spot';

export interface VcpuQuota {
  readonly code: string;
  readonly name: string;
  readonly market: AwsMarket;
  /** The instance class the quota covers. */
  readonly instanceClass: string;
}

/** Instance classes by family prefix, longest prefix first (so `dl` wins over `d`). */
const CLASS_BY_FAMILY_PREFIX: ReadonlyArray<readonly [prefix: string, instanceClass: string]> = [
  ['trn', 'Trn'],
  ['inf', 'Inf'],
  ['dl', 'DL'],
  ['vt', 'G'],
  ['gr', 'G'],
  ['g', 'G'],
  ['p', 'P'],
  ['f', 'F'],
  ['x', 'X'],
];

export const VCPU_QUOTAS: readonly VcpuQuota[] = [
  {
    code: 'L-1216C47A',
    name: 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances',
    market: 'on-demand',
    instanceClass: 'Standard',
  },
  {
    code: 'L-DB2E81BA',
    name: 'Running On-Demand G and VT instances',
    market: 'on-demand',
    instanceClass: 'G',
  },
  { code: 'L-417A185B', name: 'Running On-Demand P instances', market: 'on-demand', instanceClass: 'P' },
  { code: 'L-6E869C2A', name: 'Running On-Demand DL instances', market: 'on-demand', instanceClass: 'DL' },
  { code: 'L-1945791B', name: 'Running On-Demand Inf instances', market: 'on-demand', instanceClass: 'Inf' },
  { code: 'L-2C3B7624', name: 'Running On-Demand Trn instances', market: 'on-demand', instanceClass: 'Trn' },
  { code: 'L-74FC7D96', name: 'Running On-Demand F instances', market: 'on-demand', instanceClass: 'F' },
  { code: 'L-7295265B', name: 'Running On-Demand X instances', market: 'on-demand', instanceClass: 'X' },
  {
    code: 'L-34B43A08',
    name: 'All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests',
    market: 'spot',
    instanceClass: 'Standard',
  },
  { code: 'L-3819A6DF', name: 'All G and VT Spot Instance Requests', market: 'spot', instanceClass: 'G' },
  { code: 'L-7212CCBC', name: 'All P Spot Instance Requests', market: 'spot', instanceClass: 'P' },
  { code: 'L-85EED4F7', name: 'All DL Spot Instance Requests', market: 'spot', instanceClass: 'DL' },
  { code: 'L-B5D1601B', name: 'All Inf Spot Instance Requests', market: 'spot', instanceClass: 'Inf' },
  { code: 'L-6B0D517C', name: 'All Trn Spot Instance Requests', market: 'spot', instanceClass: 'Trn' },
  { code: 'L-88CF9481', name: 'All F Spot Instance Requests', market: 'spot', instanceClass: 'F' },
  { code: 'L-E3A00192', name: 'All X Spot Instance Requests', market: 'spot', instanceClass: 'X' },
];

/** The vCPUs each quota allows unless told: enough for a few of the largest GPU types. */
export const DEFAULT_VCPU_QUOTA = 1536;

/** The class of an instance type, e.g. `g5.xlarge` → `G`, `c5.xlarge` → `Standard`. */
export function instanceClassOf(instanceType: string): string {
  const family = instanceType.split('.')[0] ?? '';
  for (const [prefix, instanceClass] of CLASS_BY_FAMILY_PREFIX) {
    if (family.startsWith(prefix) && /^\d/.test(family.slice(prefix.length))) return instanceClass;
  }
  return 'Standard';
}

/** The quota that limits launching `instanceType` on `market`. */
export function vcpuQuotaFor(instanceType: string, market: AwsMarket): VcpuQuota {
  const instanceClass = instanceClassOf(instanceType);
  const quota = VCPU_QUOTAS.find((each) => each.instanceClass === instanceClass && each.market === market);
  if (!quota) throw new Error(`no vCPU quota for ${instanceType} (${market})`);
  return quota;
}
