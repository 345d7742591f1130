/**
 * dstack's runner starts the job's command line in a pseudo-terminal; this runner gives it pipes.
 * An interactive shell without a terminal misbehaves: bash and dash print job-control notices on
 * stderr, and busybox's ash writes its banner into the job's first redirected output (its stdout
 * buffer, full on a pipe, is flushed into the file). So the server's `<shell> -i -c <script>`
 * (dstack's form) runs here as `<shell> -c <script>`: the script's own set-up (dstack's venv) runs
 * as written; rc files such as ~/.bashrc are not read, which a terminal would let dstack's do.
 */
export function terminalLessCommandLine(commandLine: readonly string[]): string[] {
  const [shell, interactive, dashC, script, ...rest] = commandLine;
  if (
    shell !== undefined &&
    interactive === '-i' &&
    dashC === '-c' &&
    script !== undefined &&
    rest.length === 0
  ) {
    return [shell, '-c', script];
  }
  return [...commandLine];
}
