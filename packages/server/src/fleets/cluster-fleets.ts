/**
 * Cluster fleets (`placement: cluster`): the fleets a multi-node task may land on, as in dstack.
 * A cloud cluster's instances all go where its first one (the master) went: its backend, region
 * and zone, and its placement group when the backend has them (`placement-groups.ts`). An SSH
 * cluster fleet is its hosts, on the network they have.
 */
import type { InstanceOfferWithAvailability } from '@dstack/core';
import type { BackendOffer } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf, instanceProvisioningDataOf } from '../db/json-columns.js';
import type { FleetsTable, InstancesTable } from '../db/schema.js';

export function isClusterFleet(fleet: FleetsTable): boolean {
  return fleetConfigurationOf(fleet).placement === 'cluster';
}

/** Whether the project has an active SSH fleet with `placement: cluster`. */
export async function hasSshClusterFleet(app: AppContext, projectId: string): Promise<boolean> {
  const fleets = await app.db
    .selectFrom('fleets')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('status', '=', 'active')
    .execute();
  return fleets.some(
    (fleet) => isClusterFleet(fleet) && fleetConfigurationOf(fleet).ssh_config !== undefined,
  );
}

/**
 * The cluster's master instance: the live instance of the fleet that was launched first (the
 * lowest `instance_num` among those with a launch recorded), or null when none is launched yet.
 * Every other instance of the cluster goes where it went.
 */
export async function clusterMasterInstance(
  app: AppContext,
  fleetId: string,
): Promise<InstancesTable | null> {
  const launched = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('fleet_id', '=', fleetId)
    .where('deleted', '=', 0)
    .where('status', 'not in', ['terminating', 'terminated'])
    .where('job_provisioning_data', 'is not', null)
    .orderBy('instance_num')
    .limit(1)
    .executeTakeFirst();
  return launched ?? null;
}

/** Where a cluster's master went: its backend, region and (when the backend said) zone. */
export interface ClusterLocation {
  backend: string;
  region: string;
  availabilityZone: string | null;
}

export function clusterLocationOf(master: InstancesTable): ClusterLocation | null {
  const data = instanceProvisioningDataOf(master);
  if (!data || master.backend === null) return null;
  return { backend: master.backend, region: data.region, availabilityZone: data.availability_zone ?? null };
}

/**
 * `offers` narrowed to the cluster's location (dstack's `get_instance_offer_for_instance`): the
 * master's backend and region only, each offer's zones cut to the master's zone, so every node
 * is in one zone.
 */
export function offersAtClusterLocation(
  offers: readonly BackendOffer[],
  location: ClusterLocation,
): BackendOffer[] {
  return offers.flatMap((entry) => {
    if (entry.backend.type !== location.backend || entry.offer.region !== location.region) return [];
    const zone = location.availabilityZone;
    if (zone === null) return [entry];
    const zones = entry.offer.availability_zones;
    if (zones?.length && !zones.includes(zone)) return [];
    const offer: InstanceOfferWithAvailability = { ...entry.offer, availability_zones: [zone] };
    return [{ ...entry, offer }];
  });
}

/** Whether a fleet instance is at the cluster's location (pool instances a worker may take). */
export function instanceAtClusterLocation(instance: InstancesTable, location: ClusterLocation): boolean {
  const here = clusterLocationOf(instance);
  if (!here || here.backend !== location.backend || here.region !== location.region) return false;
  return location.availabilityZone === null || here.availabilityZone === location.availabilityZone;
}
