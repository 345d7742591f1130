import type { CatalogItem } from '../catalog-item.js';
import { CATALOG_CSV_COLUMNS, decodeCatalogCsv, type ParseCatalogCsvOptions } from './catalog-row-decoder.js';
import { formatPythonFloat, pythonJsonDumps } from './python-format.js';

export {
  CATALOG_CSV_COLUMNS,
  type CatalogCsvColumn,
  type CatalogWarning,
  logCatalogWarning,
  type ParseCatalogCsvOptions,
} from './catalog-row-decoder.js';

const LINE_END = '\r\n';

/**
 * Writes catalog items as a catalog file, byte for byte as gpuhunt's `storage.dump`
 * (Python's `csv.DictWriter`): header line, CRLF line ends, fields quoted only when they
 * contain a comma, a quote or a line break, floats as Python's `str(float)`, `True`/`False`,
 * empty for null, flags joined by spaces, provider data as `json.dumps`.
 */
export function formatCatalogCsv(items: Iterable<CatalogItem>): string {
  const lines = [CATALOG_CSV_COLUMNS.join(',')];
  for (const item of items) lines.push(formatCatalogCsvRow(item));
  return lines.join(LINE_END) + LINE_END;
}

/** One data line of a catalog file, without the line end. */
export function formatCatalogCsvRow(item: CatalogItem): string {
  return [
    quoteCsvField(item.instanceName),
    quoteCsvField(item.location),
    formatPythonFloat(item.price),
    String(item.cpu),
    formatPythonFloat(item.memory),
    String(item.gpuCount),
    item.gpuName === null ? '' : quoteCsvField(item.gpuName),
    item.gpuMemory === null ? '' : formatPythonFloat(item.gpuMemory),
    item.spot ? 'True' : 'False',
    item.diskSize === null ? '' : formatPythonFloat(item.diskSize),
    item.gpuVendor ?? '',
    quoteCsvField(item.flags.join(' ')),
    item.cpuArch,
    quoteCsvField(pythonJsonDumps(item.providerData)),
  ].join(',');
}

/** Python csv QUOTE_MINIMAL: quote when the field holds the delimiter, the quote or a line break. */
export function quoteCsvField(value: string): string {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code === 0x2c || code === 0x22 || code === 0x0a || code === 0x0d) {
      return `"${value.replaceAll('"', '""')}"`;
    }
  }
  return value;
}

/**
 * Reads a catalog file with gpuhunt's rules: columns located by header name (any order,
 * optional columns may be absent), CRLF or LF, quoted fields; required non-empty
 * instance_name, location, price, cpu (integer), memory, gpu_count (integer) and spot
 * (true/false in any case); legacy `tpu-` GPU names mean Google, a GPU without a vendor is
 * NVIDIA, no cpu_arch means x86. A malformed row is skipped with a {@link CatalogWarning}
 * naming the line and the column. Throws when the header lacks a required column.
 */
export function parseCatalogCsv(text: string, options: ParseCatalogCsvOptions): CatalogItem[] {
  const items: CatalogItem[] = [];
  const provider = options.provider;
  decodeCatalogCsv(text, options, (row) => {
    items.push({
      provider,
      instanceName: row.instanceName,
      location: row.location,
      price: row.price,
      cpu: row.cpu,
      memory: row.memory,
      gpuCount: row.gpuCount,
      gpuName: row.gpuName,
      gpuMemory: Number.isNaN(row.gpuMemory) ? null : row.gpuMemory,
      spot: row.spot,
      diskSize: Number.isNaN(row.diskSize) ? null : row.diskSize,
      gpuVendor: row.gpuVendor,
      flags: row.flagsText === '' ? [] : row.flagsText.split(' '),
      cpuArch: row.cpuArch,
      providerData: row.providerDataText === '{}' ? {} : JSON.parse(row.providerDataText),
    });
  });
  return items;
}
