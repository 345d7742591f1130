/**
 * A reader that stops early (`dstack logs RUN | head`) closes the pipe, and the next write fails
 * with EPIPE. Node reports that as an unhandled 'error' event, a stack trace, unless a listener
 * takes it. Nobody reads what the command would still write, so it ends quietly instead.
 */

/** Ends the process with status 0 when a write to one of `streams` finds its pipe closed; other errors still throw. */
export function exitQuietlyOnClosedPipe(
  streams: readonly NodeJS.WritableStream[] = [process.stdout, process.stderr],
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      exit(0);
    });
  }
}
