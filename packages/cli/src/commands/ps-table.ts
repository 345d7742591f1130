/**
 * `dstack ps`'s table of runs. Apart from the command (`ps.ts`): this module loads while the
 * server answers the command's request.
 */
import { isRunFinished, jobStatusMessage, RUN_PRIORITY_DEFAULT, type Run } from '@dstack/core';
import type { Colors } from '../output/colors.js';
import {
  formatBackend,
  formatGpus,
  formatPrice,
  formatRelativeTime,
  formatResources,
  latestSubmission,
  runName,
} from '../output/format.js';
import { absoluteServiceUrl } from '../output/service-endpoint.js';
import { formatTable, styled, type TableCell } from '../output/table.js';

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
    // Checked with the run (`RunSchema`): the table needs no schema of its own.
    const instanceType = provisioning?.instance_type;
    const row: TableCell[] = [
      runName(run),
      formatBackend(submission),
      instanceType ? formatGpus(instanceType.resources.gpus) : '-',
      formatPrice(provisioning?.price),
      colorStatus(run, colors),
      formatRelativeTime(run.submitted_at, now),
    ];
    if (verbose) {
      row.push(
        instanceType ? formatResources(instanceType.resources) : '-',
        instanceType ? instanceTypeName(instanceType.name, provisioning?.reservation) : '-',
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
