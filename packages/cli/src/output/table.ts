import { stripAnsi } from './colors.js';

export interface TableColumn {
  header: string;
  /** Default `left`; numbers read better right-aligned. */
  align?: 'left' | 'right';
}

export interface TableOptions {
  /** Styles the header row (e.g. bold); applied after padding. Default: none. */
  styleHeader?: (text: string) => string;
  /** Spaces between columns. Default 2. */
  gap?: number;
}

function pad(text: string, width: number, align: 'left' | 'right'): string {
  const padding = ' '.repeat(Math.max(0, width - stripAnsi(text).length));
  return align === 'right' ? padding + text : text + padding;
}

/**
 * Aligns rows under their headers, one line each, ending with a newline. Cells may carry
 * ANSI styles (their visible width is measured); trailing spaces are trimmed.
 */
export function formatTable(
  columns: ReadonlyArray<TableColumn | string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  options: TableOptions = {},
): string {
  const normalised = columns.map((column) => (typeof column === 'string' ? { header: column } : column));
  const widths = normalised.map((column, index) =>
    Math.max(stripAnsi(column.header).length, ...rows.map((row) => stripAnsi(row[index] ?? '').length)),
  );
  const gap = ' '.repeat(options.gap ?? 2);
  const render = (cells: ReadonlyArray<string>) =>
    normalised
      .map((column, index) => pad(cells[index] ?? '', widths[index]!, column.align ?? 'left'))
      .join(gap)
      .trimEnd();
  const header = render(normalised.map((column) => column.header));
  const lines = [options.styleHeader ? options.styleHeader(header) : header, ...rows.map(render)];
  return `${lines.join('\n')}\n`;
}

/** Aligns `name value` pairs, as in the run plan. */
export function formatProperties(
  properties: ReadonlyArray<readonly [string, string]>,
  styleName: (text: string) => string = (text) => text,
): string {
  const width = Math.max(0, ...properties.map(([name]) => name.length));
  return (
    properties.map(([name, value]) => `${styleName(name.padEnd(width))}  ${value}`.trimEnd()).join('\n') +
    '\n'
  );
}
