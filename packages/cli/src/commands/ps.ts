import { InstanceTypeSchema, isRunFinished, jobStatusMessage, type Run } from '@dstack/core';
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
import { absoluteServiceUrl } from '../output/service-endpoint.js';
import { formatTable, styled, type TableCell } from '../output/table.js';
import { connect, type ProjectOption } from './connect.js';
import type { PsFormat } from './output-formats.js';

export { PS_FORMATS, type PsFormat } from './output-formats.js';

export interface PsOptions extends ProjectOption {
  /** Include finished runs. Default false (active runs only). */
  all?: boolean;
  /** Add RESOURCES, INSTANCE TYPE, URL (of services) and ERROR. Default false. */
  verbose?: boolean;
  /** `table` or `json` (the Run array). Default `table`. */
  format?: PsFormat;
}

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
  /** Add `RESOURCES INSTANCE TYPE URL ERROR`. */
  verbose: boolean;
  colors: Colors;
  /** The server's URL, which a service URL given as a path (its in-server proxy) is relative to. */
  serverUrl: string;
  now?: Date;
}

/** `NAME BACKEND GPU PRICE STATUS SUBMITTED` (+ `RESOURCES INSTANCE TYPE URL ERROR` with `-v`). */
export function formatRuns(runs: readonly Run[], options: FormatRunsOptions): string {
  const { verbose, colors, serverUrl, now = new Date() } = options;
  const columns = ['NAME', 'BACKEND', 'GPU', 'PRICE', 'STATUS', 'SUBMITTED'];
  if (verbose) columns.push('RESOURCES', 'INSTANCE TYPE', 'URL', 'ERROR');
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
        instanceType.success ? instanceType.data.name : '-',
        run.service ? absoluteServiceUrl(run.service.url, serverUrl) : '-',
        runError(run),
      );
    }
    return row;
  });
  return formatTable(columns, rows, { styleHeader: colors.bold });
}

/** `dstack ps`: the project's runs, active ones unless `-a`. */
export async function psCommand(options: PsOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  const runs = await client.listRuns({ only_active: !options.all, limit: 100 });
  if (options.format === 'json') {
    io.stdout(`${formatJson(runs)}\n`);
    return 0;
  }
  io.stdout(
    formatRuns(runs, {
      verbose: Boolean(options.verbose),
      colors: createColors(Boolean(io.stdoutColors)),
      serverUrl: client.url,
    }),
  );
  return 0;
}
