/**
 * What a run could take of the project's fleets right now, for its plan (dstack's pool offers):
 * each instance of a candidate fleet that is idle, or busy with blocks still free, offered as
 * the smallest share of it that satisfies the job. Its availability says which (`idle` or
 * `busy`); the job pipeline claims from the same instances when the run is applied.
 */
import type { InstanceOfferWithAvailability, Requirements } from '@dstack/core';
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import { activeFleets } from './fleets.js';
import { smallestFittingShare } from './instance-blocks.js';

/** The fields of a run configuration that narrow which fleet instances it may use. */
export interface FleetPlacement {
  /** Only these fleets, by name. Default: every active fleet of the project. */
  fleets?: string[];
  /** Only instances of these backends. */
  backends?: string[];
  /** Only instances in these regions. */
  regions?: string[];
}

export async function fleetInstanceOffers(
  app: AppContext,
  projectId: string,
  placement: FleetPlacement,
  requirements: Requirements,
): Promise<InstanceOfferWithAvailability[]> {
  const fleets = (await activeFleets(app, projectId)).filter(
    (fleet) => !placement.fleets?.length || placement.fleets.includes(fleet.name),
  );
  if (fleets.length === 0) return [];
  const instances = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(
      'fleet_id',
      'in',
      fleets.map((fleet) => fleet.id),
    )
    .where('status', 'in', ['idle', 'busy'])
    .where('deleted', '=', 0)
    .where(sql<boolean>`busy_blocks < total_blocks`)
    .orderBy('price')
    .execute();
  return instances.flatMap((instance) => {
    if (!instance.offer) return [];
    if (placement.backends?.length && !placement.backends.includes(instance.backend ?? '')) return [];
    if (placement.regions?.length && !placement.regions.includes(instance.region ?? '')) return [];
    const offer = JSON.parse(instance.offer) as InstanceOfferWithAvailability;
    const freeBlocks = instance.total_blocks - instance.busy_blocks;
    const share = smallestFittingShare(offer, instance.total_blocks, freeBlocks, requirements);
    if (!share) return [];
    return [{ ...share, availability: instance.busy_blocks === 0 ? ('idle' as const) : ('busy' as const) }];
  });
}
