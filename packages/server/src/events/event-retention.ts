/**
 * Bounded retention (dstack's `delete_events` scheduled task): events older than
 * `events.ttlSeconds` are deleted at start and every 10 minutes after.
 */
import type { AppContext } from '../context.js';

const RETENTION_INTERVAL_MS = 10 * 60_000;

/** Deletes the events recorded before `now - ttl`; returns how many went. */
export async function deleteExpiredEvents(
  app: Pick<AppContext, 'db' | 'settings'>,
  now = Date.now(),
): Promise<number> {
  const ttlSeconds = app.settings.events.ttlSeconds;
  const cutoff = now - ttlSeconds * 1000;
  return app.db.transaction().execute(async (transaction) => {
    const expired = transaction.selectFrom('events').select('id').where('recorded_at', '<', cutoff);
    await transaction.deleteFrom('event_targets').where('event_id', 'in', expired).execute();
    const deleted = await transaction
      .deleteFrom('events')
      .where('recorded_at', '<', cutoff)
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  });
}

/** Runs `deleteExpiredEvents` now and every 10 minutes; returns the function that stops it. */
export function startEventRetention(app: AppContext): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const run = () => {
    running = deleteExpiredEvents(app).catch((error: unknown) => {
      if (!app.signal.aborted) console.error('[events] deleting expired events failed:', error);
    });
  };
  run();
  const timer = setInterval(run, RETENTION_INTERVAL_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
