/** An error the CLI reports as one line on stderr, exiting with `exitCode` (2: bad usage, 1: failure). */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A command-line usage error: exit code 2, as commander's own parse errors. */
export function usageError(message: string): CliError {
  return new CliError(message, 2);
}
