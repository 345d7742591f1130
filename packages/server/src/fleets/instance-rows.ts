/** Instance rows as the pipelines read and mark them. */
import type { AppContext } from '../context.js';
import type { InstancesTable } from '../db/schema.js';

/** How often the instance pipeline looks at an instance nothing made due (its shim's health, its idle time). */
export const INSTANCE_PASS_INTERVAL_MS = 10_000;

export async function instanceRowOf(
  app: AppContext,
  instanceId: string | null,
): Promise<InstancesTable | null> {
  if (!instanceId) return null;
  return (
    (await app.db.selectFrom('instances').selectAll().where('id', '=', instanceId).executeTakeFirst()) ?? null
  );
}

/** Makes the starting jobs of an instance due now: the instance came up, or went away. */
export async function markInstanceJobsDue(app: AppContext, instanceId: string): Promise<void> {
  await app.db
    .updateTable('jobs')
    .set({ last_processed_at: 0 })
    .where('instance_id', '=', instanceId)
    .where('status', 'in', ['provisioning', 'pulling', 'running'])
    .execute();
  app.wakeUps.wake('jobs-running');
}
