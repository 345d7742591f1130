import { describe, expect, it } from 'vitest';
import { createColors } from './colors.js';
import { formatProperties, formatTable } from './table.js';

describe('formatTable', () => {
  it('aligns columns under their headers and trims trailing spaces', () => {
    const table = formatTable(
      ['NAME', 'STATUS', 'NOTE'],
      [
        ['a-long-name', 'running', ''],
        ['b', 'done', 'ok'],
      ],
    );
    expect(table).toBe(
      ['NAME         STATUS   NOTE', 'a-long-name  running', 'b            done     ok', ''].join('\n'),
    );
  });

  it('right-aligns columns that ask for it', () => {
    const table = formatTable(
      [{ header: 'N', align: 'right' }, 'X'],
      [
        ['1', 'a'],
        ['100', 'b'],
      ],
    );
    expect(table).toBe(['  N  X', '  1  a', '100  b', ''].join('\n'));
  });

  it('measures styled cells by what the terminal shows', () => {
    const colors = createColors(true);
    const table = formatTable(['STATUS', 'AGE'], [[colors.green('done'), 'now']], {
      styleHeader: colors.bold,
    });
    const [header, row] = table.split('\n');
    expect(header).toBe('\u001b[1mSTATUS  AGE\u001b[22m');
    expect(row).toBe('\u001b[32mdone\u001b[39m    now');
  });

  it('prints only the header when there are no rows, and fills missing cells', () => {
    expect(formatTable(['A', 'B'], [])).toBe('A  B\n');
    expect(formatTable(['A', 'B'], [['x']])).toBe('A  B\nx\n');
  });
});

describe('formatProperties', () => {
  it('aligns values after the longest name', () => {
    expect(
      formatProperties([
        ['Project', 'main'],
        ['Max price', '-'],
        ['Retry', ''],
      ]),
    ).toBe('Project    main\nMax price  -\nRetry\n');
  });
});
