import { describe, expect, it } from 'vitest';
import { demultiplexDockerLogs } from './container-logs.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('demultiplexDockerLogs', () => {
  it('joins stdout and stderr frames in order without their headers', () => {
    const stream = Buffer.concat([frame(1, 'first line\n'), frame(2, 'an error\n'), frame(1, 'last line\n')]);
    expect(demultiplexDockerLogs(stream)).toBe('first line\nan error\nlast line\n');
  });

  it('passes raw text (a TTY container) through unchanged', () => {
    expect(demultiplexDockerLogs(Buffer.from('plain output\nmore\n'))).toBe('plain output\nmore\n');
  });

  it('keeps the readable part of a frame cut short', () => {
    const cut = frame(1, 'complete\n').subarray(0, 8 + 4);
    expect(demultiplexDockerLogs(cut)).toBe('comp');
  });

  it('returns an empty string for no output', () => {
    expect(demultiplexDockerLogs(Buffer.alloc(0))).toBe('');
  });
});
