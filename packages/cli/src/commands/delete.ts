import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { CliIo } from '../io.js';
import { CommandError } from '../output/command-error.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';
import { readConfigurationFile } from './read-configuration.js';

export interface DeleteOptions extends ProjectOption {
  /** The configuration file naming what to delete. */
  file: string;
  /** Do not ask for confirmation. Default false. */
  yes?: boolean;
}

/** Delay between checks while a run stops before its deletion. */
const STOP_POLL_INTERVAL_MS = 500;
/** How long a run may take to stop before `delete` gives up. */
const STOP_TIMEOUT_MS = 5 * 60_000;

/** Stops an active run and waits for it to finish: the server deletes only finished runs. */
async function stopAndWait(client: DstackApiClient, runName: string, io: CliIo): Promise<void> {
  const run = await client.getRun(runName);
  if (isRunFinished(run.status)) return;
  await client.stopRuns({ runs_names: [runName], abort: false });
  io.stdout(`Stopping ${runName}…\n`);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (!isRunFinished((await client.getRun(runName)).status)) {
    if (Date.now() > deadline)
      throw new CommandError(`${runName} did not stop in time; try dstack stop -x ${runName}`);
    await sleep(STOP_POLL_INTERVAL_MS);
  }
}

/** `dstack delete -f FILE`: deletes the run, fleet, volume or gateway the configuration names. */
export async function deleteCommand(options: DeleteOptions, io: CliIo): Promise<number> {
  const configuration = await readConfigurationFile(options.file);
  if (configuration.type === 'gateway') {
    const client = await connect(options, io);
    return (await import('./gateway.js')).deleteGatewayConfiguration(client, configuration, options.yes, io);
  }
  if (configuration.type === 'volume') {
    const client = await connect(options, io);
    return (await import('./volume.js')).deleteVolumeConfiguration(client, configuration, options.yes, io);
  }
  const name = configuration.name;
  if (!name)
    throw new CommandError(`${options.file}: the configuration has no name, so there is nothing to delete`);
  const client = await connect(options, io);
  if (configuration.type === 'fleet') {
    if (!(await confirmAction(io, `Delete the fleet ${name}?`, options.yes))) return 0;
    await client.deleteFleets({ names: [name] });
    io.stdout(`Deleted fleet ${name}\n`);
    return 0;
  }
  if (!(await confirmAction(io, `Delete the run ${name}?`, options.yes))) return 0;
  await stopAndWait(client, name, io);
  await client.deleteRuns({ runs_names: [name] });
  io.stdout(`Deleted run ${name}\n`);
  return 0;
}
