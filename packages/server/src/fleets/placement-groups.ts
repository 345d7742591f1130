/**
 * Placement groups of cluster fleets (dstack's `placement_groups`, for backends with the
 * `placement-groups` capability: an EC2 cluster placement group, a GCP compact resource policy).
 * The launch of a cluster's master makes one for the offer it tries (or reuses the fleet's group
 * that suits the offer), every other instance of the cluster launches into the fleet's group,
 * and the groups go at the backend once their fleet has ended (or the master went into another).
 * Groups are rows of `placement_groups`, written before anything else names them, so a group the
 * backend made is never forgotten.
 */
import { randomUUID } from 'node:crypto';
import {
  type ComputeWithPlacementGroups,
  generateUniquePlacementGroupName,
  hasCapability,
  type InstanceOffer,
  NoCapacityError,
  type PlacementGroup,
  PlacementGroupNotSupportedError,
} from '@dstack/core';
import type { BackendOffer } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import {
  fleetConfigurationOf,
  placementGroupConfigurationColumn,
  placementGroupConfigurationOf,
  placementGroupProvisioningDataColumn,
  placementGroupProvisioningDataOf,
} from '../db/json-columns.js';
import type { FleetsTable, InstancesTable, PlacementGroupsTable, ProjectsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import {
  type ClusterLocation,
  clusterLocationOf,
  clusterMasterInstance,
  isClusterFleet,
} from './cluster-fleets.js';

function placementGroupOf(row: PlacementGroupsTable, projectName: string): PlacementGroup {
  return {
    name: row.name,
    project_name: projectName,
    configuration: placementGroupConfigurationOf(row),
    provisioning_data: placementGroupProvisioningDataOf(row),
  };
}

/** The fleet's groups still in use (not retired, not deleted), oldest first. */
async function liveGroups(app: AppContext, fleetId: string): Promise<PlacementGroupsTable[]> {
  return app.db
    .selectFrom('placement_groups')
    .selectAll()
    .where('fleet_id', '=', fleetId)
    .where('deleted', '=', 0)
    .where('fleet_deleted', '=', 0)
    .orderBy('created_at')
    .execute();
}

/** The backend's placement group support, when the fleet is a cluster and the backend has it. */
function placementCompute(fleet: FleetsTable, entry: BackendOffer): ComputeWithPlacementGroups | null {
  if (!isClusterFleet(fleet)) return null;
  const compute = entry.backend.compute;
  if (!hasCapability(compute, 'placement-groups')) return null;
  const reservation = fleetConfigurationOf(fleet).reservation;
  if (reservation && compute.arePlacementGroupsCompatibleWithReservations?.(compute.type) === false)
    return null;
  return compute;
}

/**
 * The group the cluster's master launches into on `entry`: the fleet's group that suits the offer
 * (`isSuitablePlacementGroup`, no API call), else a new one made at the backend and recorded.
 * Null when the fleet is not a cluster or the backend has no placement groups. Throws
 * `NoCapacityError` (the launch moves on to the next offer) when the backend cannot place the
 * offer in a group or failed to make one, as dstack skips such an offer.
 */
export async function placementGroupForMaster(
  app: AppContext,
  project: Pick<ProjectsTable, 'id' | 'name'>,
  fleet: FleetsTable,
  entry: BackendOffer,
): Promise<PlacementGroup | null> {
  const compute = placementCompute(fleet, entry);
  if (!compute) return null;
  for (const row of await liveGroups(app, fleet.id)) {
    const group = placementGroupOf(row, project.name);
    if (group.configuration.backend !== entry.backend.type) continue;
    if (compute.isSuitablePlacementGroup(group, entry.offer)) return group;
  }
  return createPlacementGroup(app, project, fleet, compute, entry.offer);
}

async function createPlacementGroup(
  app: AppContext,
  project: Pick<ProjectsTable, 'id' | 'name'>,
  fleet: FleetsTable,
  compute: ComputeWithPlacementGroups,
  offer: InstanceOffer,
): Promise<PlacementGroup> {
  const group: PlacementGroup = {
    name: generateUniquePlacementGroupName(project.name, fleet.name),
    project_name: project.name,
    configuration: { backend: compute.type, region: offer.region, placement_strategy: 'cluster' },
    provisioning_data: null,
  };
  const id = randomUUID();
  // Recorded before the backend is called: a group made by a call whose answer is lost is still
  // deleted with the fleet (deleting a group that does not exist succeeds).
  await app.db
    .insertInto('placement_groups')
    .values({
      id,
      project_id: project.id,
      fleet_id: fleet.id,
      name: group.name,
      configuration: placementGroupConfigurationColumn.encode(group.configuration),
      provisioning_data: null,
      fleet_deleted: 0,
      deleted: 0,
      created_at: Date.now(),
    })
    .execute();
  try {
    group.provisioning_data = await compute.createPlacementGroup(group, offer);
  } catch (error) {
    await app.db.updateTable('placement_groups').set({ fleet_deleted: 1 }).where('id', '=', id).execute();
    const why = PlacementGroupNotSupportedError.isInstance(error)
      ? `${offer.instance.name} cannot be placed in a placement group`
      : `the placement group could not be created: ${errorMessage(error)}`;
    throw new NoCapacityError(why, { cause: error });
  }
  await app.db
    .updateTable('placement_groups')
    .set({ provisioning_data: placementGroupProvisioningDataColumn.encode(group.provisioning_data) })
    .where('id', '=', id)
    .execute();
  return group;
}

/** The group the cluster's other instances launch into: the fleet's live one, if any. */
export async function fleetPlacementGroup(
  app: AppContext,
  project: Pick<ProjectsTable, 'name'>,
  fleetId: string,
): Promise<PlacementGroup | null> {
  const [row] = await liveGroups(app, fleetId);
  return row ? placementGroupOf(row, project.name) : null;
}

/**
 * After the master launched (in `kept`, or in none): the fleet's other groups, made for offers
 * that failed, are retired, and deleted at their backend.
 */
export async function retireOtherPlacementGroups(
  app: AppContext,
  fleetId: string,
  kept: PlacementGroup | null,
): Promise<void> {
  let retire = app.db
    .updateTable('placement_groups')
    .set({ fleet_deleted: 1 })
    .where('fleet_id', '=', fleetId);
  if (kept) retire = retire.where('name', '!=', kept.name);
  await retire.where('deleted', '=', 0).execute();
  await deleteRetiredPlacementGroups(app, fleetId);
}

/** Retires every group of the fleet (it has ended) and deletes them at their backends. */
export async function deleteFleetPlacementGroups(app: AppContext, fleetId: string): Promise<boolean> {
  await app.db
    .updateTable('placement_groups')
    .set({ fleet_deleted: 1 })
    .where('fleet_id', '=', fleetId)
    .where('deleted', '=', 0)
    .execute();
  return deleteRetiredPlacementGroups(app, fleetId);
}

/**
 * Deletes the fleet's retired groups at their backends and marks them deleted. A group whose
 * backend fails (or has left the project) stays retired, to be deleted at a later pass; returns
 * whether none is left.
 */
export async function deleteRetiredPlacementGroups(app: AppContext, fleetId: string): Promise<boolean> {
  const retired = await app.db
    .selectFrom('placement_groups')
    .innerJoin('projects', 'projects.id', 'placement_groups.project_id')
    .selectAll('placement_groups')
    .select('projects.name as project_name')
    .where('placement_groups.fleet_id', '=', fleetId)
    .where('placement_groups.fleet_deleted', '=', 1)
    .where('placement_groups.deleted', '=', 0)
    .execute();
  let allDeleted = true;
  for (const row of retired) {
    const group = placementGroupOf(row, row.project_name);
    const compute = await app.backends.computeOf(row.project_id, group.configuration.backend);
    if (!compute || !hasCapability(compute, 'placement-groups')) {
      allDeleted = false;
      continue;
    }
    try {
      await compute.deletePlacementGroup(group);
    } catch (error) {
      // An instance still in the group (its termination under way) keeps it: tried again later.
      console.error(`[fleets] could not delete placement group ${group.name}: ${errorMessage(error)}`);
      allDeleted = false;
      continue;
    }
    await app.db.updateTable('placement_groups').set({ deleted: 1 }).where('id', '=', row.id).execute();
  }
  return allDeleted;
}

/** Where an instance of a fleet goes: anywhere (the master, or not a cluster), or the master's location and group. */
export interface ClusterPlacement {
  /** The cluster's first instance (or any instance of a fleet that is not a cluster). */
  isMaster: boolean;
  location: ClusterLocation | null;
  group: PlacementGroup | null;
}

/** The placement of `instance` in `fleet` (see `provisionFleetInstance`). */
export async function clusterPlacementOf(
  app: AppContext,
  project: Pick<ProjectsTable, 'name'>,
  fleet: FleetsTable,
  instance: Pick<InstancesTable, 'id'> | null,
): Promise<ClusterPlacement> {
  if (!isClusterFleet(fleet)) return { isMaster: true, location: null, group: null };
  const master = await clusterMasterInstance(app, fleet.id);
  if (!master || master.id === instance?.id) return { isMaster: true, location: null, group: null };
  return {
    isMaster: false,
    location: clusterLocationOf(master),
    group: await fleetPlacementGroup(app, project, fleet.id),
  };
}

/** The group an instance placed by `placement` launches into on `entry` (see `clusterPlacementOf`). */
export async function launchPlacementGroup(
  app: AppContext,
  project: Pick<ProjectsTable, 'id' | 'name'>,
  fleet: FleetsTable,
  placement: ClusterPlacement,
  entry: BackendOffer,
): Promise<PlacementGroup | null> {
  return placement.isMaster ? placementGroupForMaster(app, project, fleet, entry) : placement.group;
}
