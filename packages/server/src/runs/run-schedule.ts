/**
 * `schedule: {cron}` (dstack's): a scheduled run waits in `pending` and is submitted at each time
 * one of its cron expressions (UTC) names; when it finishes (but for a stop by its user) it waits
 * in `pending` for the next one. The times are read against `app.clock` (the wall clock; tests set
 * it). The run pipeline's claim on the run row makes one replica start it once.
 */
import type { RunConfiguration } from '@dstack/core';
import { Cron } from 'croner';

/** Why `cron` is not a cron expression croner reads, or null when it is. */
export function cronExpressionError(cron: string): string | null {
  try {
    new Cron(cron, { timezone: 'UTC', paused: true });
    return null;
  } catch (error) {
    return `invalid cron expression "${cron}": ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The first time after `afterMs` that one of the run's cron expressions names; null without a schedule. */
export function nextScheduledStart(configuration: RunConfiguration, afterMs: number): number | null {
  const crons = configuration.schedule?.cron;
  if (!crons?.length) return null;
  const times = crons.flatMap((cron) => {
    const next = new Cron(cron, { timezone: 'UTC', paused: true }).nextRun(new Date(afterMs));
    return next ? [next.getTime()] : [];
  });
  return times.length > 0 ? Math.min(...times) : null;
}

export function isScheduled(configuration: RunConfiguration): boolean {
  return (configuration.schedule?.cron.length ?? 0) > 0;
}
