import { isatty } from 'node:tty';
import { streamShowsColors } from './output/colors.js';

/** Where a command writes; the real process streams, or buffers in tests. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal that shows colors. */
  stderrColors: boolean;
  /** Whether stderr is a terminal, where the wait notice is drawn. Default false. */
  stderrIsTerminal?: boolean;
  /** Whether stdout is a terminal that shows colors. Default false. */
  stdoutColors?: boolean;
  /** Whether stdout is a terminal, where progress lines are redrawn in place. Default false. */
  stdoutIsTerminal?: boolean;
  /**
   * Asks a yes/no question and resolves to the answer. Undefined when nobody can answer
   * (stdin is not a terminal); commands then require `-y`.
   */
  confirm?: (question: string) => Promise<boolean>;
}

/** Reads `y`/`n` from the terminal; asks again on anything else. Ctrl-C answers no. */
async function confirmOnTerminal(question: string): Promise<boolean> {
  // Loaded when a question is asked: commands that ask none start without it.
  const { createInterface } = await import('node:readline/promises');
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  // readline takes over Ctrl-C while it reads; without a listener the prompt would just pause.
  const interrupted = new AbortController();
  readline.on('SIGINT', () => interrupted.abort());
  try {
    for (;;) {
      const answer = (await readline.question(`${question} [y/n]: `, { signal: interrupted.signal }))
        .trim()
        .toLowerCase();
      if (answer === 'y' || answer === 'yes') return true;
      if (answer === 'n' || answer === 'no') return false;
    }
  } catch (error) {
    if (interrupted.signal.aborted) {
      process.stdout.write('\n');
      return false;
    }
    throw error;
  } finally {
    readline.close();
  }
}

/** The process streams; colors and prompts only where a terminal is attached. */
export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stderrColors: streamShowsColors(process.stderr),
    stdoutColors: streamShowsColors(process.stdout),
    stdoutIsTerminal: Boolean(process.stdout.isTTY),
    stderrIsTerminal: Boolean(process.stderr.isTTY),
    // Not `process.stdin.isTTY`: the getter builds the stdin stream (~10 ms) for commands that read none.
    ...(isatty(0) ? { confirm: confirmOnTerminal } : {}),
  };
}

export { red } from './output/colors.js';
