/** Offers for a submitted job's new capacity: by fleet, within its limits and its cluster's location. */
import { isAvailable, type JobSpec, type RunConfiguration } from '@dstack/core';
import { sql } from 'kysely';
import { type BackendOffer, getOffers } from '../backends/offers.js';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf } from '../db/json-columns.js';
import type { FleetsTable, RunsTable } from '../db/schema.js';
import {
  type ClusterLocation,
  clusterLocationOf,
  clusterMasterInstance,
  isClusterFleet,
  offersAtClusterLocation,
} from '../fleets/cluster-fleets.js';
import { createRunFleet } from '../fleets/fleets.js';
import {
  offersWithFittingShare,
  requirementsForSplitInstance,
  shareableOffers,
} from '../fleets/instance-blocks.js';
import type { ClusterJobPlacement } from './cluster-jobs.js';
import { offerFiltersOf } from './run-plan.js';

/** Offers for new capacity: those to launch on now, and those whose capacity is busy now. */
export interface CapacityOffers {
  available: BackendOffer[];
  /**
   * Offers that exist but whose capacity the backend's own instances hold now (the local host):
   * it frees as their jobs end.
   */
  busy: BackendOffer[];
}

function byAvailability(entries: readonly BackendOffer[]): CapacityOffers {
  return {
    available: entries.filter((entry) => isAvailable(entry.offer.availability)),
    busy: entries.filter((entry) => entry.offer.availability === 'busy'),
  };
}

/** Offers for one instance of `fleet` for the job; the fleet's own backend and region limits apply. */
export async function fleetOffersForJob(
  fleet: FleetsTable,
  backends: readonly ProjectBackend[],
  configuration: RunConfiguration,
  jobSpec: JobSpec,
): Promise<CapacityOffers> {
  const runFilters = offerFiltersOf(configuration);
  const fleetConfiguration = fleetConfigurationOf(fleet);
  const fleetBackends = fleetConfiguration.backends;
  const allowed = backends.filter(
    (backend) => !fleetBackends?.length || fleetBackends.includes(backend.type),
  );
  const blocks = fleetConfiguration.blocks;
  // A fleet split into blocks may launch an instance larger than the job: its share must fit.
  const requirements =
    blocks === 1 ? jobSpec.requirements : requirementsForSplitInstance(jobSpec.requirements);
  const { offers } = await getOffers(allowed, requirements, {
    ...runFilters,
    regions: runFilters.regions ?? fleetConfiguration.regions,
    instanceTypes: runFilters.instanceTypes ?? fleetConfiguration.instance_types,
    availabilityZones: runFilters.availabilityZones ?? fleetConfiguration.availability_zones,
  });
  return byAvailability(offersWithFittingShare(shareableOffers(offers, blocks), jobSpec.requirements));
}

/** Where a cluster fleet's master is, or null (not a cluster, or no instance launched yet). */
async function clusterFleetLocation(app: AppContext, fleet: FleetsTable): Promise<ClusterLocation | null> {
  if (!isClusterFleet(fleet)) return null;
  const master = await clusterMasterInstance(app, fleet.id);
  return master ? clusterLocationOf(master) : null;
}

/**
 * Available offers of the first fleet that can grow and has any; the fleet's own backend and
 * region limits apply. With none available, the busy offers found on the way.
 */
export async function offersForNewCapacity(
  app: AppContext,
  fleets: readonly FleetsTable[],
  backends: readonly ProjectBackend[],
  run: RunsTable,
  configuration: RunConfiguration,
  jobSpec: JobSpec,
  cluster: ClusterJobPlacement,
): Promise<{ fleet: FleetsTable | null; offers: BackendOffer[]; busy: BackendOffer[] }> {
  const busy: BackendOffer[] = [];
  const location = cluster.kind === 'worker' ? cluster.location : null;
  for (const fleet of fleets) {
    const fleetConfiguration = fleetConfigurationOf(fleet);
    // An SSH fleet is its hosts: it never grows by new cloud or local instances.
    if (fleetConfiguration.ssh_config !== undefined) continue;
    const max = fleetConfiguration.nodes?.max ?? null;
    if (max !== null) {
      const count = await app.db
        .selectFrom('instances')
        .select(sql<number>`COUNT(*)`.as('count'))
        .where('fleet_id', '=', fleet.id)
        .where('deleted', '=', 0)
        .where('status', 'not in', ['terminating', 'terminated'])
        .executeTakeFirst();
      if (Number(count?.count ?? 0) >= max) continue;
    }
    const all = await fleetOffersForJob(fleet, backends, configuration, jobSpec);
    // Any job's new instance in a cluster fleet joins it where its master is (one zone, its group).
    const fleetLocation = location ?? (await clusterFleetLocation(app, fleet));
    const found = fleetLocation
      ? {
          available: offersAtClusterLocation(all.available, fleetLocation),
          busy: offersAtClusterLocation(all.busy, fleetLocation),
        }
      : all;
    if (found.available.length > 0) return { fleet, offers: found.available, busy: [] };
    busy.push(...found.busy);
  }
  if (fleets.length === 0 && cluster.kind !== 'worker') {
    const { offers } = await getOffers(backends, jobSpec.requirements, offerFiltersOf(configuration), {
      deadlineMs: app.settings.backends.offersDeadlineMs,
    });
    const found = byAvailability(offers);
    if (found.available.length > 0) {
      const fleet = await createRunFleet(app, run.project_id, run.run_name, cluster.kind === 'master');
      return { fleet, offers: found.available, busy: [] };
    }
    busy.push(...found.busy);
  }
  return { fleet: null, offers: [], busy };
}
