const NEWLINE = 0x0a;

/**
 * Cuts a byte stream into lines (each with its trailing newline). Works on bytes, not strings,
 * so output that is not UTF-8 survives. A line longer than `maxLineBytes` is emitted in pieces
 * so a process printing without newlines cannot grow memory without bound.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    private readonly maxLineBytes = 64 * 1024,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline + 1;
      const room = this.maxLineBytes - this.pendingBytes;
      if (end - start > room) {
        this.append(chunk.subarray(start, start + room));
        this.flush();
        start += room;
        continue;
      }
      this.append(chunk.subarray(start, end));
      if (newline !== -1) {
        this.flush();
      }
      start = end;
    }
  }

  /** Emits what is buffered (a last line without a newline). */
  flush(): void {
    if (this.pendingBytes === 0) {
      return;
    }
    const line = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.onLine(line);
  }

  private append(bytes: Buffer): void {
    if (bytes.length > 0) {
      // Copy: the stream may reuse the chunk's memory.
      this.pending.push(Buffer.from(bytes));
      this.pendingBytes += bytes.length;
    }
  }
}
