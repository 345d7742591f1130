/** Where a command writes; the real process streams, or buffers in tests. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal that shows colors. */
  stderrColors: boolean;
}

/** Colors only on a TTY, and never when `NO_COLOR` is set (https://no-color.org). */
export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stderrColors: Boolean(process.stderr.isTTY) && !process.env.NO_COLOR,
  };
}

export function red(text: string, enabled: boolean): string {
  return enabled ? `\u001b[31m${text}\u001b[39m` : text;
}
