import { printable } from './printable.js';

export interface TableColumn {
  header: string;
  /** Default `left`; numbers read better right-aligned. */
  align?: 'left' | 'right';
}

/** A cell the CLI styles (e.g. a status in green): the style is applied after sanitizing. */
export interface StyledCell {
  text: string;
  style: (text: string) => string;
}

/** A cell's text, shown through `printable`: control characters from the server become escapes. */
export type TableCell = string | StyledCell;

export interface TableOptions {
  /** Styles the header row (e.g. bold); applied after padding. Default: none. */
  styleHeader?: (text: string) => string;
  /** Spaces between columns. Default 2. */
  gap?: number;
}

/** `text` in `style`, for a table cell. */
export function styled(text: string, style: (text: string) => string): StyledCell {
  return { text, style };
}

function cellText(cell: TableCell | undefined): string {
  return printable(typeof cell === 'string' ? cell : (cell?.text ?? ''));
}

function pad(cell: TableCell | undefined, width: number, align: 'left' | 'right'): string {
  const text = cellText(cell);
  const padding = ' '.repeat(Math.max(0, width - text.length));
  const shown = typeof cell === 'object' ? cell.style(text) : text;
  return align === 'right' ? padding + shown : shown + padding;
}

/**
 * Aligns rows under their headers, one line each, ending with a newline. Every cell goes through
 * `printable`; a `StyledCell` is styled after that, and measured by its text. Trailing spaces
 * are trimmed.
 */
export function formatTable(
  columns: ReadonlyArray<TableColumn | string>,
  rows: ReadonlyArray<ReadonlyArray<TableCell>>,
  options: TableOptions = {},
): string {
  const normalised = columns.map((column) => (typeof column === 'string' ? { header: column } : column));
  const widths = normalised.map((column, index) =>
    Math.max(cellText(column.header).length, ...rows.map((row) => cellText(row[index]).length)),
  );
  const gap = ' '.repeat(options.gap ?? 2);
  const render = (cells: ReadonlyArray<TableCell>) =>
    normalised
      .map((column, index) => pad(cells[index], widths[index]!, column.align ?? 'left'))
      .join(gap)
      .trimEnd();
  const header = render(normalised.map((column) => column.header));
  const lines = [options.styleHeader ? options.styleHeader(header) : header, ...rows.map(render)];
  return `${lines.join('\n')}\n`;
}

/** Aligns `name value` pairs, as in the run plan; values go through `printable`. */
export function formatProperties(
  properties: ReadonlyArray<readonly [string, string]>,
  styleName: (text: string) => string = (text) => text,
): string {
  const width = Math.max(0, ...properties.map(([name]) => name.length));
  return `${properties
    .map(([name, value]) => `${styleName(name.padEnd(width))}  ${printable(value)}`.trimEnd())
    .join('\n')}\n`;
}
