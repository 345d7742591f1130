import type { CliIo } from '../io.js';
import { printable } from './printable.js';

/** A status line: redrawn in place with a spinner on a terminal, printed once per change elsewhere. */
export interface ProgressLine {
  /**
   * Shows `text` (through `printable`: it holds the server's names and statuses); on a pipe,
   * prints it only when it differs from the last one.
   */
  update(text: string): void;
  /** Removes the line (terminal) so that other output starts on a clean line. */
  clear(): void;
}

const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_INTERVAL_MS = 100;
const CLEAR_LINE = '\r\u001b[2K';

export function createProgressLine(io: CliIo, stream: 'stdout' | 'stderr' = 'stdout'): ProgressLine {
  const line = createRawProgressLine(io, stream);
  return { update: (text) => line.update(printable(text)), clear: () => line.clear() };
}

function createRawProgressLine(io: CliIo, stream: 'stdout' | 'stderr'): ProgressLine {
  const write = stream === 'stdout' ? io.stdout : io.stderr;
  const isTerminal = stream === 'stdout' ? io.stdoutIsTerminal : io.stderrIsTerminal;
  let last: string | undefined;
  if (!isTerminal) {
    return {
      update(text) {
        if (text !== last) write(`${text}\n`);
        last = text;
      },
      clear() {},
    };
  }
  let frame = 0;
  let timer: NodeJS.Timeout | undefined;
  const draw = () => {
    if (last === undefined) return;
    write(`${CLEAR_LINE}${SPINNER_FRAMES[frame % SPINNER_FRAMES.length]} ${last}`);
    frame += 1;
  };
  return {
    update(text) {
      last = text;
      draw();
      // The spinner must not keep the process alive on its own.
      timer ??= setInterval(draw, SPINNER_INTERVAL_MS).unref();
    },
    clear() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (last !== undefined) write(CLEAR_LINE);
      last = undefined;
    },
  };
}
