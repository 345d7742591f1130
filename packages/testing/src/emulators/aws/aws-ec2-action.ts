/**
 * What every family of EC2 actions shares: an action's signature (the account, the region the
 * request was signed for, the query's parameters) and how EC2 renders a resource's tags.
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import type { Ec2Account } from './aws-ec2-account.js';
import type { QueryParams } from './aws-query-params.js';
import type { XmlValue } from './aws-xml.js';

/** One EC2 action: its answer, or an `Ec2ApiError` thrown. */
export type Ec2Action = (account: Ec2Account, region: string, params: QueryParams) => EmulatorResponse;

/** A `tagSet`: EC2 leaves it out when the resource has no tags. */
export function tagSet(tags: ReadonlyMap<string, string>): XmlValue {
  return tags.size === 0 ? undefined : [...tags].map(([key, value]) => ({ key, value }));
}
