/**
 * A small RFC 4180 reader for the SkyPilot source CSVs: quoted fields may hold
 * commas, doubled quotes and newlines; LF and CRLF line endings are both accepted.
 */
export function parseCsvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let inQuotes = false;
  let index = 0;
  const endRow = () => {
    row.push(field);
    field = '';
    // A trailing newline yields no extra empty row.
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
  };
  while (index < text.length) {
    const char = text[index];
    if (inQuotes) {
      if (char === '"') {
        if (text[index + 1] === '"') {
          field += '"';
          index += 2;
          continue;
        }
        inQuotes = false;
      } else {
        field += char;
      }
      index += 1;
      continue;
    }
    if (char === '"') inQuotes = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\n') endRow();
    else if (char === '\r' && text[index + 1] === '\n') {
      endRow();
      index += 1;
    } else field += char;
    index += 1;
  }
  if (field !== '' || row.length > 0) endRow();
  return rows;
}

/** Rows keyed by the header line's column names; missing trailing cells read as ''. */
export function parseCsvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsvRows(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (!header) return [];
  return rows.map((cells) => Object.fromEntries(header.map((name, column) => [name, cells[column] ?? ''])));
}
