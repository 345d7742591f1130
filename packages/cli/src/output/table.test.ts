import { describe, expect, it } from 'vitest';
import { createColors } from './colors.js';
import { formatProperties, formatTable, styled } from './table.js';

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
    const table = formatTable(['STATUS', 'AGE'], [[styled('done', colors.green), 'now']], {
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

  it('shows control characters in cells as escapes, measured as shown, styles kept', () => {
    const colors = createColors(true);
    const table = formatTable(
      ['NAME', 'STATUS'],
      [
        ['\u001b[31mred\r\nx\u0000', styled('bad\u001b[2J', colors.red)],
        ['ok', 'done'],
      ],
    );
    expect(table).toBe(
      [
        'NAME                  STATUS',
        '\\x1b[31mred\\r\\nx\\x00  \u001b[31mbad\\x1b[2J\u001b[39m',
        'ok                    done',
        '',
      ].join('\n'),
    );
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

  it('shows control characters in values as escapes', () => {
    expect(formatProperties([['User', 'eve\u001b]0;title\u0007\u009b']])).toBe(
      'User  eve\\x1b]0;title\\x07\\x9b\n',
    );
  });
});
