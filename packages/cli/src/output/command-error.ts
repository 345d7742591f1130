import { DstackError } from '@dstack/core';

/**
 * A failure to report to the user as `error: <message>`, with exit code 1 (`report-error.ts`);
 * in a module of its own, which a command can import without what reporting needs.
 */
export class CommandError extends DstackError {
  static override readonly marker: string = '@dstack/cli/CommandError';
  override readonly name = 'CommandError';
}
