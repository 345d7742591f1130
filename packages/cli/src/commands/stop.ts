import type { CliIo } from '../io.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';

export interface StopOptions extends ProjectOption {
  /** Abort: terminate at once instead of stopping gracefully. Default false. */
  abort?: boolean;
  /** Do not ask for confirmation. Default false. */
  yes?: boolean;
}

/** `dstack stop RUN [-x]`: prints `Stopped RUN` or `Aborted RUN`. */
export async function stopCommand(runName: string, options: StopOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  const verb = options.abort ? 'Abort' : 'Stop';
  if (!(await confirmAction(io, `${verb} the run ${runName}?`, options.yes))) return 0;
  await client.stopRuns({ runs_names: [runName], abort: Boolean(options.abort) });
  io.stdout(`${options.abort ? 'Aborted' : 'Stopped'} ${runName}\n`);
  return 0;
}
