import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished, type RunStatus } from '@dstack/core';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { createProgressLine } from '../output/progress.js';
import type { SshPortForwarder } from '../ssh/port-forwarder.js';
import { abortOnInterrupt } from './abort-on-interrupt.js';
import { formatDetached } from './attach-run.js';
import { connect, type ProjectOption } from './connect.js';
import { prepareRunSsh, startRunSsh } from './run-ssh.js';
import { exitCodeOf, formatFinalStatus } from './run-status.js';

export type AttachCommandOptions = ProjectOption;

/**
 * Delay between two polls of the run. Attaching lasts as long as the user works in the run,
 * so this is slower than `apply`'s poll, which also fetches logs.
 */
const POLL_INTERVAL_MS = 1000;

/** Statuses shown as a progress line while waiting for the run to start. */
const WAITING_STATUSES: readonly RunStatus[] = ['pending', 'submitted', 'provisioning'];

/**
 * `dstack attach RUN`: configures `ssh RUN`, waits for the run to run, prints how to connect,
 * forwards its ports to localhost and stays until Ctrl-C (0, the run goes on) or the run ends
 * (its final status; 0 when done).
 */
export async function attachCommand(
  runName: string,
  options: AttachCommandOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  const first = await client.getRun(runName);
  if (isRunFinished(first.status)) throw new CommandError(`run ${runName} is ${first.status}`);
  const key = await prepareRunSsh(client, runName);
  const progress = createProgressLine(io);
  const interrupt = abortOnInterrupt();
  const request = { signal: interrupt.signal };
  let forwarder: SshPortForwarder | undefined;
  try {
    for (let run = first; ; run = await client.getRun(runName, request)) {
      if (isRunFinished(run.status)) {
        progress.clear();
        io.stdout(`${formatFinalStatus(run, createColors(Boolean(io.stdoutColors)))}\n`);
        return exitCodeOf(run);
      }
      if (WAITING_STATUSES.includes(run.status)) progress.update(`${runName} ${run.status}…`);
      if (run.status === 'running' && !forwarder) {
        progress.clear();
        forwarder = await startRunSsh(client, run, runName, key, io);
        io.stdout('Press Ctrl+C to detach; the run continues.\n');
      }
      await sleep(POLL_INTERVAL_MS, undefined, request);
    }
  } catch (error) {
    // Whatever was in flight when the user pressed Ctrl-C fails with an abort error.
    if (!interrupt.signal.aborted) throw error;
    progress.clear();
    io.stdout(formatDetached(runName));
    return 0;
  } finally {
    forwarder?.close();
    interrupt.dispose();
  }
}
