/**
 * A cloud fleet's own instances (`nodes`): the requirements and offers of its
 * configuration, and the `createInstance` of one pending instance on the
 * cheapest offer that works. Only backends with the `create-instance`
 * capability can hold fleet instances, as in dstack.
 */
import {
  DEFAULT_FLEET_IDLE_DURATION,
  defaultResourcesSpec,
  type FleetConfiguration,
  isAvailable,
  type PlacementGroup,
  type Requirements,
  requireCapability,
} from '@dstack/core';
import { type BackendOffer, getOffers } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf } from '../db/json-columns.js';
import type { FleetsTable, InstancesTable, ProjectsTable } from '../db/schema.js';
import { isClusterFleet, offersAtClusterLocation } from './cluster-fleets.js';
import { fleetLaunchBackends } from './fleet-backends.js';
import { shareableOffers } from './instance-blocks.js';
import { insertPendingInstance, type LaunchResult, launchOnFirstOffer } from './instance-launch.js';
import { instanceConfigurationOf } from './launch-parameters.js';
import { clusterPlacementOf, launchPlacementGroup, retireOtherPlacementGroups } from './placement-groups.js';

/** `spot_policy` → `Requirements.spot`: on-demand by default, as in dstack. */
function spotOf(policy: FleetConfiguration['spot_policy']): boolean | null {
  if (policy === 'spot') return true;
  if (policy === 'auto') return null;
  return false;
}

/** What each instance of the fleet must offer (from the fields of its configuration that say so). */
export function fleetRequirementsOf(
  configuration: Pick<
    FleetConfiguration,
    'resources' | 'max_price' | 'spot_policy' | 'reservation' | 'placement' | 'backend_options'
  >,
): Requirements {
  return {
    resources: configuration.resources ?? defaultResourcesSpec(),
    max_price: configuration.max_price ?? null,
    spot: spotOf(configuration.spot_policy),
    reservation: configuration.reservation ?? null,
    multinode: configuration.placement === 'cluster',
    backend_options: configuration.backend_options ?? null,
  };
}

/** Seconds a fleet instance may stay idle (beyond `nodes.min`): `idle_duration`, default 3 days; null = off. */
export function fleetIdleSeconds(configuration: FleetConfiguration): number | null {
  const value = configuration.idle_duration ?? DEFAULT_FLEET_IDLE_DURATION;
  return value === 'off' ? null : value;
}

/** Available offers for one instance of the fleet, cheapest first, each split into the fleet's `blocks`. */
export async function fleetOffers(
  app: AppContext,
  projectId: string,
  configuration: FleetConfiguration,
): Promise<BackendOffer[]> {
  const backends = fleetLaunchBackends(configuration, await app.backends.getProjectBackends(projectId));
  const { offers } = await getOffers(backends, fleetRequirementsOf(configuration), {
    backends: configuration.backends,
    regions: configuration.regions,
    instanceTypes: configuration.instance_types,
    availabilityZones: configuration.availability_zones,
  });
  const available = offers.filter((entry) => isAvailable(entry.offer.availability));
  return shareableOffers(available, configuration.blocks ?? 1);
}

/**
 * Adds pending instances to the fleet until it has `wanted` live ones (the fleet pipeline
 * provisions them); returns how many it added. Each is counted and inserted under the fleet's
 * lock (`insertPendingInstance`), not from a count read before: the apply and the fleet pipeline
 * topping one fleet up at once (on Postgres, each may read the size before the other inserts)
 * add `wanted` in all, not `wanted` each.
 */
export async function topUpFleetInstances(
  app: AppContext,
  fleet: FleetsTable,
  wanted: number,
): Promise<number> {
  const configuration = fleetConfigurationOf(fleet);
  let added = 0;
  while (added < wanted) {
    const instance = await insertPendingInstance(
      app,
      {
        projectId: fleet.project_id,
        fleet,
        requirements: fleetRequirementsOf(configuration),
        terminationIdleTime: fleetIdleSeconds(configuration),
        busyBlocks: 0,
      },
      wanted,
    );
    if (instance === null) break;
    added++;
  }
  return added;
}

/**
 * Calls `createInstance` for one pending fleet instance on the cheapest offer that works. The
 * row's id is the launch's idempotency key: a pass that retries a launch whose result was
 * never stored (a server that died mid-call) gets the machine the first call launched.
 *
 * In a cluster fleet (`placement: cluster`) the first instance launched is the master: it makes
 * (or reuses) a placement group for the offer it tries when the backend has them, and every
 * other instance goes to the master's backend, region and zone, into that group.
 */
export async function provisionFleetInstance(
  app: AppContext,
  fleet: FleetsTable,
  project: ProjectsTable,
  instance: InstancesTable,
): Promise<LaunchResult> {
  const configuration = fleetConfigurationOf(fleet);
  const placement = await clusterPlacementOf(app, project, fleet, instance);
  const allOffers = await fleetOffers(app, project.id, configuration);
  const offers = placement.location ? offersAtClusterLocation(allOffers, placement.location) : allOffers;
  const instanceConfiguration = await instanceConfigurationOf(app, project, instance, fleet);
  let masterGroup: PlacementGroup | null = null;
  const result = await launchOnFirstOffer(app, instance, offers, async (entry) => {
    const group = await launchPlacementGroup(app, project, fleet, placement, entry);
    masterGroup = group;
    return requireCapability(entry.backend.compute, 'create-instance').createInstance(
      entry.offer,
      instanceConfiguration,
      group,
    );
  });
  if (placement.isMaster && isClusterFleet(fleet)) {
    await retireOtherPlacementGroups(app, fleet.id, result.launched ? masterGroup : null);
  }
  if (result.launched) app.wakeUps.wake('instances');
  return result;
}
