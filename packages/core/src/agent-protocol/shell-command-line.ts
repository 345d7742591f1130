/**
 * A job spec's `commands` is the argv the runner executes, as in dstack (the server makes it
 * `<shell> -i -c "<lines>"` or an entrypoint's words: runs/job-commands.ts). This is the plain
 * form for shell lines, `/bin/sh -c "a && b"`, for what submits to a runner directly (the
 * agents' own tests, benchmarks).
 */
export function shellCommandLine(lines: readonly string[]): string[] {
  return ['/bin/sh', '-c', lines.join(' && ')];
}
