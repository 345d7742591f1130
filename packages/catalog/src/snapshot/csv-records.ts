import { CsvScanner } from '../csv/csv-scanner.js';

/**
 * Rows of a SkyPilot source CSV, read with the catalog's own tokenizer (quoted fields may
 * hold commas, doubled quotes and newlines; LF and CRLF line ends; empty lines skipped).
 */
export function parseCsvRows(text: string): string[][] {
  const scanner = new CsvScanner(text);
  const rows: string[][] = [];
  while (scanner.nextRow()) {
    rows.push(Array.from({ length: scanner.count }, (_, index) => scanner.field(index)));
  }
  return rows;
}

/** Rows keyed by the header line's column names; missing trailing cells read as ''. */
export function parseCsvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsvRows(text);
  if (!header) return [];
  return rows.map((cells) => Object.fromEntries(header.map((name, column) => [name, cells[column] ?? ''])));
}
