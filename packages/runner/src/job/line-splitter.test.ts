import { describe, expect, it } from 'vitest';
import { LineSplitter } from './line-splitter.js';

function split(chunks: string[], maxLineBytes?: number): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line.toString('utf8')), maxLineBytes);
  for (const chunk of chunks) {
    splitter.push(Buffer.from(chunk));
  }
  splitter.flush();
  return lines;
}

describe('LineSplitter', () => {
  it('keeps newlines and joins lines split across chunks', () => {
    expect(split(['a\nb', 'c\n\nd'])).toEqual(['a\n', 'bc\n', '\n', 'd']);
  });

  it('cuts a line longer than the limit into pieces that add up to it', () => {
    const lines = split(['x'.repeat(10), 'y\n'], 4);
    expect(lines).toEqual(['xxxx', 'xxxx', 'xxy\n']);
  });

  it('does not split multi-byte characters it receives whole within a line', () => {
    expect(split(['é', '\n'])).toEqual(['é\n']);
  });
});
