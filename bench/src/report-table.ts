/** The bench's figures table: median and p90 of each benchmark next to its target and reference. */
import type { Timing } from './stats.js';

export interface Row {
  name: string;
  timing: Timing;
  results: number | string;
  /** Absent for informational rows. */
  targetMs?: number;
  /** The reference's figure beside ours; 'no reference' when absent. */
  reference?: string;
}

export function printTable(rows: readonly Row[]): void {
  const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;
  const header = ['benchmark', 'median', 'p90', 'runs', 'results', 'target', 'status', 'reference'];
  const lines = rows.map((row) => [
    row.name,
    ms(row.timing.medianMs),
    ms(row.timing.p90Ms),
    String(row.timing.runs),
    String(row.results),
    row.targetMs === undefined ? '-' : `< ${row.targetMs} ms`,
    row.targetMs === undefined ? '-' : row.timing.medianMs < row.targetMs ? 'PASS' : 'MISS',
    row.reference ?? 'no reference',
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => (line[column] as string).length)),
  );
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0] as number) : cell.padStart(widths[column] as number),
      )
      .join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
}
