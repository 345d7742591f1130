import { setTimeout as sleep } from 'node:timers/promises';
import { afterIoPoll } from '../api/after-io-poll.js';
import type { RequestOptions } from '../api/client.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { formatJson } from '../output/printable.js';
import { abortOnInterrupt } from './abort-on-interrupt.js';
import { connect, type ProjectOption } from './connect.js';
import type { PsFormat } from './output-formats.js';

export { PS_FORMATS, type PsFormat } from './output-formats.js';

export interface PsOptions extends ProjectOption {
  /** Include finished runs. Default false (active runs only). */
  all?: boolean;
  /** Add RESOURCES, INSTANCE TYPE, PRIORITY, URL (of services) and ERROR. Default false. */
  verbose?: boolean;
  /** `table` or `json` (the Run array). Default `table`. */
  format?: PsFormat;
  /** Redraw the table every `PS_WATCH_INTERVAL_MS` until Ctrl-C. Default false. */
  watch?: boolean;
}

/** How often `ps -w` refreshes (dstack's live table refreshes about as often). */
export const PS_WATCH_INTERVAL_MS = 2_000;

/** `dstack ps`: the project's runs, active ones unless `-a`; `-w` refreshes the table until Ctrl-C. */
export async function psCommand(options: PsOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  if (options.watch && options.format === 'json')
    throw new CommandError('--watch shows the table; it cannot be used with --format json');
  if (options.format === 'json') {
    const runs = await client.listRuns({ only_active: !options.all, limit: 100 });
    io.stdout(`${formatJson(runs)}\n`);
    return 0;
  }
  // The table's code loads while the server answers.
  const tableModule = afterIoPoll(() => import('./ps-table.js'));
  const table = async (request?: RequestOptions) => {
    const [runs, { formatRuns }] = await Promise.all([
      client.listRuns({ only_active: !options.all, limit: 100 }, request),
      tableModule,
    ]);
    return formatRuns(runs, {
      verbose: Boolean(options.verbose),
      colors: createColors(Boolean(io.stdoutColors)),
      serverUrl: client.url,
    });
  };
  if (options.watch) return watchTable(table, io);
  io.stdout(await table());
  return 0;
}

/**
 * Draws the table again every `PS_WATCH_INTERVAL_MS` until Ctrl-C: in place on a terminal (the
 * previous drawing is erased), one table after another elsewhere (a pipe, a log).
 */
async function watchTable(table: (request: RequestOptions) => Promise<string>, io: CliIo): Promise<number> {
  const interrupt = abortOnInterrupt();
  const request = { signal: interrupt.signal };
  let drawnLines = 0;
  try {
    for (;;) {
      const text = await table(request);
      if (io.stdoutIsTerminal && drawnLines > 0) io.stdout(`\u001b[${drawnLines}F\u001b[J`);
      else if (drawnLines > 0) io.stdout('\n');
      io.stdout(text);
      drawnLines = text.split('\n').length - 1;
      await sleep(PS_WATCH_INTERVAL_MS, undefined, request);
    }
  } catch (error) {
    if (!interrupt.signal.aborted) throw error;
    return 0;
  } finally {
    interrupt.dispose();
  }
}
