/**
 * What dstack offers on AWS: the catalog's AWS rows of the instance families dstack supports,
 * disks of 100 GB–16 TB, and availability from the account's vCPU quotas (Service Quotas): a
 * quota of 0 for the type's class and market is `no_quota`, anything else `available` (dstack
 * says unknown; the plan shows both as launchable).
 */
import { GetServiceQuotaCommand } from '@aws-sdk/client-service-quotas';
import type { InstanceOffer, Range } from '@dstack/core';

/** dstack's AWS families (gpuhunt's AWS filter, `t2.small` aside). */
export const AWS_SUPPORTED_FAMILIES: readonly string[] = [
  'm7i',
  'c7i',
  'r7i',
  't3',
  'c5',
  'm5',
  'p4d',
  'p4de',
  'p5',
  'p5e',
  'p5en',
  'p6-b200',
  'p6-b300',
  'g4dn',
  'g5',
  'g6',
  'g6e',
  'gr6',
  'g7',
  'g7e',
];

/** The root disk sizes EBS takes (GB). */
export const AWS_CONFIGURABLE_DISK_SIZE: Range = { min: 100, max: 16 * 1024 };

/** Whether the instance type (`g5.xlarge`) is of a family dstack supports. */
export function isSupportedInstanceType(instanceType: string): boolean {
  const family = instanceType.split('.')[0] ?? '';
  return AWS_SUPPORTED_FAMILIES.includes(family);
}

export type AwsMarket = 'on-demand' | 'spot';

/** The Service Quotas codes (vCPUs) of the classes dstack's families belong to. */
const QUOTA_CODES: Readonly<Record<'Standard' | 'G' | 'P', Record<AwsMarket, string>>> = {
  Standard: { 'on-demand': 'L-1216C47A', spot: 'L-34B43A08' },
  G: { 'on-demand': 'L-DB2E81BA', spot: 'L-3819A6DF' },
  P: { 'on-demand': 'L-417A185B', spot: 'L-7212CCBC' },
};

/** The vCPU quota code that limits `instanceType` on `market`. */
export function vcpuQuotaCode(instanceType: string, market: AwsMarket): string {
  const family = instanceType.split('.')[0] ?? '';
  const instanceClass = /^gr?\d/.test(family) ? 'G' : /^p\d/.test(family) ? 'P' : 'Standard';
  return QUOTA_CODES[instanceClass][market];
}

/** Quota values per (region, code), read once per region and code. */
export class VcpuQuotas {
  readonly #values = new Map<string, Promise<number | undefined>>();
  readonly #read: (region: string, code: string) => Promise<number | undefined>;

  constructor(read: (region: string, code: string) => Promise<number | undefined>) {
    this.#read = read;
  }

  /** The quota, or undefined when it could not be read (then availability stays unknown). */
  get(region: string, code: string): Promise<number | undefined> {
    const key = `${region} ${code}`;
    let value = this.#values.get(key);
    if (!value) {
      value = this.#read(region, code).catch(() => undefined);
      this.#values.set(key, value);
    }
    return value;
  }
}

/** Reads a vCPU quota from Service Quotas. */
export async function readVcpuQuota(
  client: { send(command: GetServiceQuotaCommand): Promise<{ Quota?: { Value?: number } }> },
  code: string,
): Promise<number | undefined> {
  const answer = await client.send(new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: code }));
  return answer.Quota?.Value;
}

/** The market of an offer. */
export function marketOf(offer: InstanceOffer): AwsMarket {
  return offer.instance.resources.spot ? 'spot' : 'on-demand';
}
