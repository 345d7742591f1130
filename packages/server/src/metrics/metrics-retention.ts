/**
 * Keeps `job_metrics_points` bounded, as dstack's `delete_metrics`: a running job's samples for
 * `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` (an hour), any other job's (finished, or removed
 * with its run) for `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS` (a week). Every 5 minutes.
 */
import type { AppContext } from '../context.js';

const RETENTION_INTERVAL_MS = 5 * 60 * 1000;

/** Deletes the samples past their time; returns how many. */
export async function deleteExpiredJobMetrics(app: AppContext, now = Date.now()): Promise<number> {
  const runningTtl = app.settings.metrics.runningTtlSeconds;
  const finishedTtl = app.settings.metrics.finishedTtlSeconds;
  const nowMicro = now * 1000;
  const running = await app.db
    .deleteFrom('job_metrics_points')
    .where('timestamp_micro', '<', nowMicro - runningTtl * 1_000_000)
    .where('job_id', 'in', (eb) =>
      eb.selectFrom('jobs').select('jobs.id').where('jobs.status', '=', 'running'),
    )
    .executeTakeFirst();
  const others = await app.db
    .deleteFrom('job_metrics_points')
    .where('timestamp_micro', '<', nowMicro - finishedTtl * 1_000_000)
    .executeTakeFirst();
  return Number(running.numDeletedRows) + Number(others.numDeletedRows);
}

export interface MetricsRetention {
  stop(): Promise<void>;
}

/** Runs `deleteExpiredJobMetrics` now and every 5 minutes until stopped (pass the background context, `backgroundContextOf`). */
export function startMetricsRetention(app: AppContext): MetricsRetention {
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = deleteExpiredJobMetrics(app).catch(() => undefined);
  };
  sweep();
  const timer = setInterval(sweep, RETENTION_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
