import { setTimeout as sleep } from 'node:timers/promises';
import {
  InstanceTypeSchema,
  isRunFinished,
  jobStatusMessage,
  RUN_PRIORITY_DEFAULT,
  type Run,
} from '@dstack/core';
import type { RequestOptions } from '../api/client.js';
import type { CliIo } from '../io.js';
import { type Colors, createColors } from '../output/colors.js';
import {
  formatBackend,
  formatGpus,
  formatPrice,
  formatRelativeTime,
  formatResources,
  latestSubmission,
  runName,
} from '../output/format.js';
import { formatJson } from '../output/printable.js';
import { CommandError } from '../output/report-error.js';
import { absoluteServiceUrl } from '../output/service-endpoint.js';
import { formatTable, styled, type TableCell } from '../output/table.js';
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

/**
 * The STATUS cell, as dstack's: a finished run shows why its job ended (`exited (3)`, `no offers`,
 * `error`, `stopped`; the server's `status_message`, or the same worked out from the reason when a
 * server sends none), a run in progress its own (`pulling`, `retrying`, else the status).
 */
function statusMessage(run: Run): string {
  const submission = latestSubmission(run);
  if (isRunFinished(run.status) && submission)
    return submission.status_message ?? jobStatusMessage(submission);
  return run.status_message ?? run.status;
}

function colorStatus(run: Run, colors: Colors): TableCell {
  const text = statusMessage(run);
  if (run.status === 'done') return styled(text, colors.green);
  if (run.status === 'failed') return styled(text, colors.red);
  if (run.status === 'running') return styled(text, colors.bold);
  return text;
}

function runError(run: Run): string {
  const submission = latestSubmission(run);
  if (run.error) return run.error;
  if (run.status === 'failed' && submission?.exit_status) return `exit status ${submission.exit_status}`;
  if (run.status === 'failed' || run.status === 'terminated') return run.termination_reason ?? '-';
  return '-';
}

export interface FormatRunsOptions {
  /** Add `RESOURCES INSTANCE TYPE PRIORITY URL ERROR`. */
  verbose: boolean;
  colors: Colors;
  /** The server's URL, which a service URL given as a path (its in-server proxy) is relative to. */
  serverUrl: string;
  now?: Date;
}

/** `NAME BACKEND GPU PRICE STATUS SUBMITTED` (+ `RESOURCES INSTANCE TYPE PRIORITY URL ERROR` with `-v`). */
export function formatRuns(runs: readonly Run[], options: FormatRunsOptions): string {
  const { verbose, colors, serverUrl, now = new Date() } = options;
  const columns = ['NAME', 'BACKEND', 'GPU', 'PRICE', 'STATUS', 'SUBMITTED'];
  if (verbose) columns.push('RESOURCES', 'INSTANCE TYPE', 'PRIORITY', 'URL', 'ERROR');
  const rows = runs.map((run) => {
    const submission = latestSubmission(run);
    const provisioning = submission?.job_provisioning_data;
    const instanceType = InstanceTypeSchema.safeParse(provisioning?.instance_type);
    const row: TableCell[] = [
      runName(run),
      formatBackend(submission),
      instanceType.success ? formatGpus(instanceType.data.resources.gpus) : '-',
      formatPrice(provisioning?.price),
      colorStatus(run, colors),
      formatRelativeTime(run.submitted_at, now),
    ];
    if (verbose) {
      row.push(
        instanceType.success ? formatResources(instanceType.data.resources) : '-',
        instanceType.success ? instanceTypeName(instanceType.data.name, provisioning?.reservation) : '-',
        String(run.run_spec.configuration.priority ?? RUN_PRIORITY_DEFAULT),
        run.service ? absoluteServiceUrl(run.service.url, serverUrl) : '-',
        runError(run),
      );
    }
    return row;
  });
  return formatTable(columns, rows, { styleHeader: colors.bold });
}

/** The instance type, with the reservation it runs in (`g5.xlarge (cr-…)`), as dstack's `ps -v`. */
function instanceTypeName(name: string, reservation: string | null | undefined): string {
  return reservation ? `${name} (${reservation})` : name;
}

/** `dstack ps`: the project's runs, active ones unless `-a`; `-w` refreshes the table until Ctrl-C. */
export async function psCommand(options: PsOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  if (options.watch && options.format === 'json')
    throw new CommandError('--watch shows the table; it cannot be used with --format json');
  const table = async (request?: RequestOptions) =>
    formatRuns(await client.listRuns({ only_active: !options.all, limit: 100 }, request), {
      verbose: Boolean(options.verbose),
      colors: createColors(Boolean(io.stdoutColors)),
      serverUrl: client.url,
    });
  if (options.watch) return watchTable(table, io);
  if (options.format === 'json') {
    const runs = await client.listRuns({ only_active: !options.all, limit: 100 });
    io.stdout(`${formatJson(runs)}\n`);
    return 0;
  }
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
