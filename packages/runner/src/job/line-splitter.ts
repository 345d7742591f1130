const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** Milliseconds a partial line (a prompt, output without a newline) waits before it is sent anyway. */
export const DEFAULT_PARTIAL_LINE_DELAY_MS = 250;

export interface LineSplitterOptions {
  /** Longest piece emitted; a longer line is cut. Default 64 KiB. */
  maxLineBytes?: number;
  /**
   * Milliseconds after which buffered bytes without a line end are emitted anyway, so a prompt
   * (`read -p`) or a line still being written shows up. Default 250; null: only on `flush()`.
   */
  partialLineDelayMs?: number | null;
}

/**
 * Cuts a byte stream into lines, each with its terminator: `\n`, `\r\n`, or a lone `\r`, which
 * progress bars (tqdm, pip, curl) end each redraw with, so each redraw is sent as it happens
 * and the terminal that prints the logs redraws it in place. Works on bytes, not strings, so
 * output that is not UTF-8 survives. A line longer than `maxLineBytes` is emitted in pieces so
 * a process printing without line ends cannot grow memory without bound.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private partialLineTimer: NodeJS.Timeout | null = null;
  private readonly maxLineBytes: number;
  private readonly partialLineDelayMs: number | null;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    options: LineSplitterOptions = {},
  ) {
    this.maxLineBytes = options.maxLineBytes ?? 64 * 1024;
    this.partialLineDelayMs =
      options.partialLineDelayMs === undefined ? DEFAULT_PARTIAL_LINE_DELAY_MS : options.partialLineDelayMs;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const lineEnd = lineEndAfter(chunk, start);
      const end = lineEnd === -1 ? chunk.length : lineEnd;
      const room = this.maxLineBytes - this.pendingBytes;
      if (end - start > room) {
        this.append(chunk.subarray(start, start + room));
        this.flush();
        start += room;
        continue;
      }
      this.append(chunk.subarray(start, end));
      if (lineEnd !== -1) {
        this.flush();
      }
      start = end;
    }
    this.schedulePartialLine();
  }

  /** Emits what is buffered (a line without its end yet). */
  flush(): void {
    if (this.partialLineTimer !== null) {
      clearTimeout(this.partialLineTimer);
      this.partialLineTimer = null;
    }
    if (this.pendingBytes === 0) {
      return;
    }
    const line = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.onLine(line);
  }

  private schedulePartialLine(): void {
    if (this.pendingBytes === 0 || this.partialLineDelayMs === null || this.partialLineTimer !== null) {
      return;
    }
    this.partialLineTimer = setTimeout(() => {
      this.partialLineTimer = null;
      this.flush();
    }, this.partialLineDelayMs);
    // A pending partial line never keeps the runner alive.
    this.partialLineTimer.unref();
  }

  private append(bytes: Buffer): void {
    if (bytes.length > 0) {
      // Copy: the stream may reuse the chunk's memory.
      this.pending.push(Buffer.from(bytes));
      this.pendingBytes += bytes.length;
    }
  }
}

/** The index just past the first line end at or after `start`, or -1; `\r\n` is one line end. */
function lineEndAfter(chunk: Buffer, start: number): number {
  for (let index = start; index < chunk.length; index++) {
    const byte = chunk[index];
    if (byte === NEWLINE) return index + 1;
    if (byte === CARRIAGE_RETURN) return chunk[index + 1] === NEWLINE ? index + 2 : index + 1;
  }
  return -1;
}
