import { type Migration, sql } from 'kysely';
import type { AnyDatabase } from './migration-helpers.js';

/**
 * The instances a job may take (fleet-instance-offers.ts) were read by fleet and status: every
 * busy instance of the fleet, full or not, for every job placed, so placing jobs on a fleet of
 * thousands of busy instances read thousands of rows each. This partial index holds only the
 * instances with blocks free, cheapest first per fleet. Its condition is written out here and in
 * the query alike (literals, not bound values: both SQLite and Postgres use a partial index only
 * for a query whose condition implies the index's); a test checks the query's plan uses it.
 */
export default function takeableInstancesIndex(): Migration {
  return {
    async up(db: AnyDatabase) {
      // The index by fleet and status was read by that query only; with it SQLite would keep
      // choosing it over the partial index. The other reads by fleet need the fleet alone.
      await db.schema.dropIndex('instances_fleet_id_status_idx').execute();
      await db.schema.createIndex('instances_fleet_id_idx').on('instances').column('fleet_id').execute();
      await db.schema
        .createIndex('instances_takeable_idx')
        .on('instances')
        .columns(['fleet_id', 'price'])
        .where(
          sql.raw<boolean>(
            "status IN ('idle', 'busy') AND deleted = 0 AND unreachable = 0 AND busy_blocks < total_blocks",
          ),
        )
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('instances_takeable_idx').execute();
      await db.schema.dropIndex('instances_fleet_id_idx').execute();
      await db.schema
        .createIndex('instances_fleet_id_status_idx')
        .on('instances')
        .columns(['fleet_id', 'status'])
        .execute();
    },
  };
}
