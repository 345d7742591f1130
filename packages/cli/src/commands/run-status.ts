import type { Run } from '@dstack/core';
import type { Colors } from '../output/colors.js';
import { latestSubmission, runName } from '../output/format.js';
import { printable } from '../output/printable.js';

/** Why the run ended, for the final line: `exit status 3`, `stopped_by_user`, a server message. */
function describeTermination(run: Run): string | undefined {
  const submission = latestSubmission(run);
  if (
    submission?.exit_status !== null &&
    submission?.exit_status !== undefined &&
    submission.exit_status !== 0
  ) {
    return `exit status ${submission.exit_status}`;
  }
  const reason = submission?.termination_reason ?? run.termination_reason ?? undefined;
  const message = submission?.termination_reason_message ?? run.error ?? undefined;
  if (reason && message) return `${reason}: ${message}`;
  return reason ?? message;
}

/**
 * `Run NAME done`, `Run NAME failed (exit status 3)`, `Run NAME terminated (stopped_by_user)`;
 * the server's words through `printable`.
 */
export function formatFinalStatus(run: Run, colors: Colors): string {
  const status =
    run.status === 'done'
      ? colors.green(run.status)
      : run.status === 'failed'
        ? colors.red(run.status)
        : printable(run.status);
  const detail = run.status === 'done' ? undefined : describeTermination(run);
  return `Run ${printable(runName(run))} ${status}${detail ? ` (${printable(detail)})` : ''}`;
}

/** dstack's convention: 0 when the run is done, 1 when it failed or was stopped. */
export function exitCodeOf(run: Run): number {
  return run.status === 'done' ? 0 : 1;
}
