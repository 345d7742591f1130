import { afterEach, describe, expect, it, vi } from 'vitest';
import { LineSplitter, type LineSplitterOptions } from './line-splitter.js';

function split(chunks: string[], options: LineSplitterOptions = {}): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line.toString('utf8')), {
    partialLineDelayMs: null,
    ...options,
  });
  for (const chunk of chunks) {
    splitter.push(Buffer.from(chunk));
  }
  splitter.flush();
  return lines;
}

describe('LineSplitter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps newlines and joins lines split across chunks', () => {
    expect(split(['a\nb', 'c\n\nd'])).toEqual(['a\n', 'bc\n', '\n', 'd']);
  });

  it('ends a line at a carriage return, so each progress bar redraw is sent as it comes', () => {
    expect(split(['10%\r', '20%\r30', '%\rdone\n'])).toEqual(['10%\r', '20%\r', '30%\r', 'done\n']);
  });

  it('takes \\r\\n as one line end', () => {
    expect(split(['a\r\nb\r\n'])).toEqual(['a\r\n', 'b\r\n']);
  });

  it('cuts a line longer than the limit into pieces that add up to it', () => {
    const lines = split(['x'.repeat(10), 'y\n'], { maxLineBytes: 4 });
    expect(lines).toEqual(['xxxx', 'xxxx', 'xxy\n']);
  });

  it('does not split multi-byte characters it receives whole within a line', () => {
    expect(split(['é', '\n'])).toEqual(['é\n']);
  });

  it('sends a partial line (a prompt) once no line end came for a while', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line.toString('utf8')), {
      partialLineDelayMs: 250,
    });
    splitter.push(Buffer.from('Continue? '));
    vi.advanceTimersByTime(249);
    expect(lines).toEqual([]);
    splitter.push(Buffer.from('[y/n] '));
    vi.advanceTimersByTime(1);
    expect(lines).toEqual(['Continue? [y/n] ']);
    splitter.push(Buffer.from('y\n'));
    vi.advanceTimersByTime(1_000);
    expect(lines).toEqual(['Continue? [y/n] ', 'y\n']);
  });
});
