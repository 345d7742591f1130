/** Fleet and instance rows → the API models of @dstack/core (Fleet, Instance). */
import type { Fleet, Instance } from '@dstack/core';
import { fleetSpecColumn, instanceOfferOf, instanceProvisioningDataOf } from '../db/json-columns.js';
import type { FleetsTable, InstancesTable } from '../db/schema.js';
import { isoTime } from '../http/iso-time.js';

export function instanceOf(
  instance: InstancesTable,
  projectName: string,
  fleetName: string | null,
): Instance {
  const provisioning = instanceProvisioningDataOf(instance);
  const offer = instanceOfferOf(instance);
  return {
    id: instance.id,
    project_name: projectName,
    name: instance.name,
    fleet_id: instance.fleet_id,
    fleet_name: fleetName,
    instance_num: instance.instance_num,
    status: instance.status,
    unreachable: instance.unreachable === 1,
    termination_reason: instance.termination_reason,
    created: isoTime(instance.created_at) as string,
    backend: instance.backend,
    region: instance.region,
    instance_type: provisioning?.instance_type ?? offer?.instance ?? null,
    hostname: provisioning?.hostname ?? null,
    price: instance.price,
    total_blocks: instance.total_blocks,
    busy_blocks: instance.busy_blocks,
  };
}

/**
 * The spec with a `profile`, which dstack's clients require: fleets here are applied from their
 * configuration alone, so the profile is dstack's empty one.
 */
function withProfile(spec: Fleet['spec']): Fleet['spec'] {
  return 'profile' in spec && spec.profile != null
    ? spec
    : { ...spec, profile: { name: '', default: false } };
}

export function fleetOf(
  fleet: FleetsTable,
  projectName: string,
  instances: readonly InstancesTable[],
): Fleet {
  return {
    id: fleet.id,
    name: fleet.name,
    project_name: projectName,
    spec: withProfile(fleetSpecColumn.decode(fleet.spec, fleet.id)),
    created_at: isoTime(fleet.created_at) as string,
    status: fleet.status,
    status_message: fleet.status_message,
    instances: instances
      .filter((instance) => instance.deleted === 0)
      .sort((a, b) => a.instance_num - b.instance_num)
      .map((instance) => instanceOf(instance, projectName, fleet.name)),
  };
}
