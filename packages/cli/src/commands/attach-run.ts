import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished, type LogEvent, type Run, type RunStatus } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import { LogReader, LogWriter } from '../api/log-reader.js';
import { LogStreamFollower } from '../api/log-stream-follower.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { printable } from '../output/printable.js';
import { createProgressLine } from '../output/progress.js';
import { formatServiceEndpoint } from '../output/service-endpoint.js';
import { exitCodeOf, formatFinalStatus } from './run-status.js';

/** Delay between two polls of the run (and of its logs on servers without `logs/stream`). */
const POLL_INTERVAL_MS = 200;

/** Statuses shown as a progress line: before the job starts and while it stops. */
const WAITING_STATUSES: readonly RunStatus[] = ['pending', 'submitted', 'provisioning', 'terminating'];

export interface AttachOptions {
  /** Detaches when aborted (Ctrl-C): the run goes on. */
  signal: AbortSignal;
  /** Called once, the first time the run is seen running (a dev environment's SSH access). */
  onRunning?: (run: Run) => Promise<void>;
}

/** What is printed when the user detaches with Ctrl-C. */
export function formatDetached(name: string): string {
  return `\nDetached; the run continues. Stop it with dstack stop ${printable(name)}\n`;
}

/**
 * Follows a run until it finishes: status changes as a progress line, a service's URL (and
 * model endpoint) once it runs, job output as it is logged, then `Run NAME <status>`. Returns the exit code (0 when done, 1 otherwise); on abort,
 * prints how to stop the run and returns 0.
 */
/**
 * The progress line of a run that waits: dstack's `is waiting for schedule…  Next run: …` for a
 * scheduled run between its starts (UTC), else its status.
 */
export function waitingLine(name: string, run: Run): string {
  const scheduled = run.status === 'pending' && run.run_spec.configuration.schedule && run.next_triggered_at;
  if (!scheduled) return `${name} ${run.status}…`;
  const next = new Date(run.next_triggered_at as string).toISOString().slice(0, 16).replace('T', ' ');
  return `${name} is waiting for schedule… Next run: ${next} UTC`;
}

export async function attachToRun(
  client: DstackApiClient,
  name: string,
  io: CliIo,
  options: AttachOptions,
): Promise<number> {
  const colors = createColors(Boolean(io.stdoutColors));
  const progress = createProgressLine(io);
  const writer = new LogWriter(io);
  let servicePrinted = false;
  let runningSeen = false;
  const showStatus = async (run: Run) => {
    if (WAITING_STATUSES.includes(run.status)) progress.update(waitingLine(name, run));
    else progress.clear();
    if (run.status !== 'running') return;
    if (run.service && !servicePrinted) {
      servicePrinted = true;
      io.stdout(formatServiceEndpoint(run.service, client.url));
    }
    if (!runningSeen) {
      runningSeen = true;
      await options.onRunning?.(run);
    }
  };
  const showEvents = (events: readonly LogEvent[]) => {
    if (events.length > 0) progress.clear();
    writer.write(events);
  };
  // Also ends the log stream when attaching fails for another reason (the status poll's error).
  const done = new AbortController();
  const signal = AbortSignal.any([options.signal, done.signal]);
  try {
    const stream = await LogStreamFollower.open(client, name, { signal });
    const run = stream
      ? await followStream(client, name, stream, { showStatus, showEvents, signal })
      : await followByPolling(client, name, { showStatus, showEvents, signal });
    progress.clear();
    io.stdout(`${formatFinalStatus(run, colors)}\n`);
    return exitCodeOf(run);
  } catch (error) {
    // Whatever was in flight when the user pressed Ctrl-C fails with an abort error.
    if (!options.signal.aborted) throw error;
    progress.clear();
    io.stdout(formatDetached(name));
    return 0;
  } finally {
    done.abort();
  }
}

interface FollowHandlers {
  showStatus(run: Run): Promise<void>;
  showEvents(events: readonly LogEvent[]): void;
  signal: AbortSignal;
}

/**
 * Logs pushed by `logs/stream` while the status is polled for the progress line; returns the
 * finished run once the stream has delivered its last event.
 */
async function followStream(
  client: DstackApiClient,
  name: string,
  stream: LogStreamFollower,
  handlers: FollowHandlers,
): Promise<Run> {
  let streamEnded = false;
  const following = stream
    .follow((event) => handlers.showEvents([event]))
    .then(() => {
      streamEnded = true;
    });
  // Observed here so that a failure while the status loop is busy is not reported as unhandled; awaited below.
  following.catch(() => {});
  const request = { signal: handlers.signal };
  for (;;) {
    const run: Run = await client.getRun(name, request);
    if (isRunFinished(run.status) || streamEnded) {
      // The stream ends only after the last event of a finished run.
      await following;
      return isRunFinished(run.status) ? run : client.getRun(name, request);
    }
    await handlers.showStatus(run);
    await Promise.race([sleep(POLL_INTERVAL_MS, undefined, request), following]);
  }
}

/** The run and its logs polled in turn: for servers without `logs/stream`. */
async function followByPolling(
  client: DstackApiClient,
  name: string,
  handlers: FollowHandlers,
): Promise<Run> {
  const reader = new LogReader(client, name);
  const request = { signal: handlers.signal };
  for (;;) {
    // The status is read before the logs: once it says finished, one more read gets the rest.
    const run: Run = await client.getRun(name, request);
    if (isRunFinished(run.status)) {
      handlers.showEvents(await reader.readNew(request));
      return run;
    }
    await handlers.showStatus(run);
    handlers.showEvents(await reader.readNew(request));
    await sleep(POLL_INTERVAL_MS, undefined, request);
  }
}
