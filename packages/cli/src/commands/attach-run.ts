import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished, type Run, type RunStatus } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import { LogReader, LogWriter } from '../api/log-reader.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { createProgressLine } from '../output/progress.js';
import { exitCodeOf, formatFinalStatus } from './run-status.js';

/** Delay between two polls of the run and its logs. */
const POLL_INTERVAL_MS = 200;

/** Statuses shown as a progress line: before the job starts and while it stops. */
const WAITING_STATUSES: readonly RunStatus[] = ['pending', 'submitted', 'provisioning', 'terminating'];

export interface AttachOptions {
  /** Detaches when aborted (Ctrl-C): the run goes on. */
  signal: AbortSignal;
}

/**
 * Follows a run until it finishes: status changes as a progress line, job output as it is
 * logged, then `Run NAME <status>`. Returns the exit code (0 when done, 1 otherwise); on abort,
 * prints how to stop the run and returns 0.
 */
export async function attachToRun(
  client: DstackApiClient,
  name: string,
  io: CliIo,
  options: AttachOptions,
): Promise<number> {
  const colors = createColors(Boolean(io.stdoutColors));
  const progress = createProgressLine(io);
  const reader = new LogReader(client, name);
  const writer = new LogWriter(io);
  const request = { signal: options.signal };
  const showLogs = async () => {
    const events = await reader.readNew(request);
    if (events.length > 0) progress.clear();
    writer.write(events);
  };
  try {
    for (;;) {
      // The status is read before the logs: once it says finished, one more read gets the rest.
      const run: Run = await client.getRun(name, request);
      if (isRunFinished(run.status)) {
        await showLogs();
        progress.clear();
        io.stdout(`${formatFinalStatus(run, colors)}\n`);
        return exitCodeOf(run);
      }
      if (WAITING_STATUSES.includes(run.status)) progress.update(`${name} ${run.status}…`);
      else progress.clear();
      await showLogs();
      await sleep(POLL_INTERVAL_MS, undefined, request);
    }
  } catch (error) {
    // Whatever was in flight when the user pressed Ctrl-C fails with an abort error.
    if (!options.signal.aborted) throw error;
    progress.clear();
    io.stdout(`\nDetached; the run continues. Stop it with dstack stop ${name}\n`);
    return 0;
  }
}

/** Aborts on the first SIGINT or SIGTERM until `dispose` is called. */
export function abortOnInterrupt(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', abort);
      process.off('SIGTERM', abort);
    },
  };
}
