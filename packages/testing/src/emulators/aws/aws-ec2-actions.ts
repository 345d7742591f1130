/**
 * The EC2 actions the emulator answers (those dstack's AWS backend and gpuhunt's collector call),
 * each rendering the XML members the SDK reads: one module per resource family (instances,
 * offerings, networking, volumes and placement groups, capacity reservations), joined here,
 * every one answering `DryRun`.
 */
import type { Ec2Action } from './aws-ec2-action.js';
import { EC2_CAPACITY_RESERVATION_ACTIONS } from './aws-ec2-capacity-reservation-actions.js';
import { EC2_INSTANCE_ACTIONS } from './aws-ec2-instance-actions.js';
import { EC2_NETWORK_ACTIONS } from './aws-ec2-network-actions.js';
import { EC2_OFFERING_ACTIONS } from './aws-ec2-offering-actions.js';
import { EC2_VOLUME_ACTIONS } from './aws-ec2-volume-actions.js';
import { booleanParam, listValues, requiredParam, tagsOf } from './aws-query-params.js';
import { ec2Response } from './aws-xml.js';
import { Ec2ApiError, instanceNotFound } from './ec2-api-error.js';

/** CreateTags: on instances, security groups, VPCs and subnets (volumes tag at creation). */
const createTags: Ec2Action = (account, region, params) => {
  const resourceIds = listValues(params, 'ResourceId');
  if (resourceIds.length === 0) requiredParam(params, 'ResourceId.1');
  const tags = tagsOf(params, 'Tag');
  const targets = resourceIds.map((id) => {
    if (id.startsWith('i-')) {
      const instance = account.instances.find(region, id);
      if (!instance) throw instanceNotFound([id]);
      return instance.tags;
    }
    if (id.startsWith('sg-')) return account.network.securityGroup(region, id).tags;
    if (id.startsWith('vpc-')) return account.network.vpc(region, id).tags;
    if (id.startsWith('subnet-')) return account.network.subnet(region, id).tags;
    throw new Ec2ApiError(400, 'InvalidID', `The ID '${id}' is not valid`);
  });
  for (const target of targets) for (const [key, value] of tags) target.set(key, value);
  return ec2Response('CreateTags', { return: true });
};

/** `DryRun=true`: EC2 checks permissions only and answers DryRunOperation (412). */
function dryRunOr(action: Ec2Action): Ec2Action {
  return (account, region, params) => {
    if (booleanParam(params, 'DryRun')) {
      throw new Ec2ApiError(412, 'DryRunOperation', 'Request would have succeeded, but DryRun flag is set.');
    }
    return action(account, region, params);
  };
}

export const EC2_ACTIONS: Readonly<Record<string, Ec2Action>> = Object.fromEntries(
  Object.entries({
    ...EC2_INSTANCE_ACTIONS,
    ...EC2_OFFERING_ACTIONS,
    ...EC2_NETWORK_ACTIONS,
    CreateTags: createTags,
    ...EC2_VOLUME_ACTIONS,
    ...EC2_CAPACITY_RESERVATION_ACTIONS,
  }).map(([name, action]) => [name, dryRunOr(action)]),
);
