import { describe, expect, it } from 'vitest';
import { formatJson, printable } from './printable.js';

describe('printable', () => {
  it('leaves ordinary text, Unicode included, as it is', () => {
    expect(printable('brave-fox-1 a100 (80GB) ✓ Zürich 東京 \\ "quoted"')).toBe(
      'brave-fox-1 a100 (80GB) ✓ Zürich 東京 \\ "quoted"',
    );
  });

  it('shows C0 controls, DEL and C1 controls as escapes, so escape sequences do nothing', () => {
    expect(printable('a\u0000b\u0007c\td\ne\rf\u001b[31mg\u007fh\u0085i\u009b2J')).toBe(
      'a\\x00b\\x07c\\td\\ne\\rf\\x1b[31mg\\x7fh\\x85i\\x9b2J',
    );
  });

  it('shows line separators and bidirectional overrides as escapes', () => {
    expect(printable('txt.\u202eexe\u2028x\u2066y\u200f')).toBe('txt.\\u202eexe\\u2028x\\u2066y\\u200f');
  });
});

describe('formatJson', () => {
  it('escapes what JSON leaves raw and parses back to the same value', () => {
    const value = { name: 'a\u007f\u009b\u202e\u2028b', note: 'c\u001b\n' };
    const text = formatJson(value);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u202e]/);
    expect(JSON.parse(text)).toEqual(value);
    expect(text).toBe(
      JSON.stringify(value, null, 2).replace('\u007f\u009b\u202e\u2028', '\\u007f\\u009b\\u202e\\u2028'),
    );
  });
});
