import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished } from '@dstack/core';
import { LogReader, LogWriter } from '../api/log-reader.js';
import { LogStreamFollower } from '../api/log-stream-follower.js';
import type { CliIo } from '../io.js';
import { connect, type ProjectOption } from './connect.js';

/** Delay between polls with `-f` on servers without `logs/stream`. */
const FOLLOW_INTERVAL_MS = 200;

export interface LogsOptions extends ProjectOption {
  /** Keep printing new logs until the run finishes. Default false. */
  follow?: boolean;
}

/** `dstack logs RUN [-f]`: the run's job output, stdout and stderr to their streams. */
export async function logsCommand(runName: string, options: LogsOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  // Fails early with the server's message when the run does not exist.
  let run = await client.getRun(runName);
  const writer = new LogWriter(io);
  if (options.follow && !isRunFinished(run.status)) {
    // The stream sends what was logged so far, then each new line as it is stored, until the run ends.
    const stream = await LogStreamFollower.open(client, runName);
    if (stream) {
      await stream.follow((event) => writer.write([event]));
      return 0;
    }
  }
  const reader = new LogReader(client, runName);
  writer.write(await reader.readNew());
  while (options.follow && !isRunFinished(run.status)) {
    await sleep(FOLLOW_INTERVAL_MS);
    run = await client.getRun(runName);
    writer.write(await reader.readNew());
  }
  return 0;
}
