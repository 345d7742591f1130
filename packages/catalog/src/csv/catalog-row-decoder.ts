import {
  ACCELERATOR_VENDORS,
  type AcceleratorVendor,
  CPU_ARCHITECTURES,
  type CpuArchitecture,
} from '../gpus/known-accelerators.js';
import { CsvScanner, parseDecimal, parseInteger } from './csv-scanner.js';

/** The columns of a catalog file, in gpuhunt's order (`CATALOG_V2_FIELDS`). The file name carries the provider. */
export const CATALOG_CSV_COLUMNS = [
  'instance_name',
  'location',
  'price',
  'cpu',
  'memory',
  'gpu_count',
  'gpu_name',
  'gpu_memory',
  'spot',
  'disk_size',
  'gpu_vendor',
  'flags',
  'cpu_arch',
  'provider_data',
] as const;
export type CatalogCsvColumn = (typeof CATALOG_CSV_COLUMNS)[number];

/** A malformed row that was skipped while reading a catalog file. */
export interface CatalogWarning {
  /** The file or URL the row came from, when known. */
  source?: string;
  /** 1-based line of the file where the row starts. */
  line: number;
  /** What is wrong: the column and the value. */
  message: string;
}

export interface ParseCatalogCsvOptions {
  /** Provider of every row (the file name carries it, not a column). */
  provider: string;
  /** File name or URL, quoted in warnings. */
  source?: string;
  /** Called for each malformed row, which is skipped. Default: `console.warn`. */
  onWarning?: (warning: CatalogWarning) => void;
}

/** The default warning handler: one line on stderr per skipped row. */
export function logCatalogWarning(warning: CatalogWarning): void {
  const where = warning.source ? `${warning.source}:${warning.line}` : `line ${warning.line}`;
  console.warn(`Skipping malformed catalog row at ${where}: ${warning.message}`);
}

const REQUIRED_COLUMNS = [
  'instance_name',
  'location',
  'price',
  'cpu',
  'memory',
  'gpu_count',
  'spot',
] as const;

/** Vendor codes used by the columnar store: 0 = none, then ACCELERATOR_VENDORS order + 1. */
export const VENDOR_CODES: ReadonlyMap<string, number> = new Map(
  ACCELERATOR_VENDORS.map((v, i) => [v, i + 1]),
);
/** CPU architecture codes: CPU_ARCHITECTURES order. */
export const ARCH_CODES: ReadonlyMap<string, number> = new Map(CPU_ARCHITECTURES.map((a, i) => [a, i]));

/**
 * One decoded row. The object is reused from row to row: copy what you keep.
 * Absent optional numbers are NaN; absent strings are null.
 */
export interface DecodedCatalogRow {
  line: number;
  instanceName: string;
  location: string;
  price: number;
  cpu: number;
  memory: number;
  gpuCount: number;
  gpuName: string | null;
  gpuMemory: number;
  spot: boolean;
  diskSize: number;
  gpuVendor: AcceleratorVendor | null;
  /** 0 = none, see {@link VENDOR_CODES}. */
  vendorCode: number;
  /** Flags separated by single spaces; '' for none. */
  flagsText: string;
  cpuArch: CpuArchitecture;
  archCode: number;
  /** The JSON text of provider data, validated to be an object; '{}' when empty. */
  providerDataText: string;
}

class RowError extends Error {}

/**
 * Reads a catalog file row by row with gpuhunt's reader rules, calling `onRow` with each
 * valid row and `onWarning` for each malformed one. Columns are located by header name.
 * Throws when the header lacks a required column (the text is not a catalog file).
 */
export function decodeCatalogCsv(
  text: string,
  options: { source?: string; onWarning?: (warning: CatalogWarning) => void },
  onRow: (row: DecodedCatalogRow) => void,
): void {
  const scanner = new CsvScanner(text);
  if (!scanner.nextRow()) return;
  const header = new Map<string, number>();
  for (let index = 0; index < scanner.count; index++) header.set(scanner.field(index), index);
  const missing = REQUIRED_COLUMNS.filter((column) => !header.has(column));
  if (missing.length > 0) {
    const where = options.source ? ` ${options.source}` : '';
    throw new Error(
      `Not a catalog file${where}: the header lacks required column(s) ${missing.join(', ')} ` +
        `(expected ${CATALOG_CSV_COLUMNS.join(',')})`,
    );
  }
  const column = (name: CatalogCsvColumn): number => header.get(name) ?? -1;
  const columns = {
    instanceName: column('instance_name'),
    location: column('location'),
    price: column('price'),
    cpu: column('cpu'),
    memory: column('memory'),
    gpuCount: column('gpu_count'),
    gpuName: column('gpu_name'),
    gpuMemory: column('gpu_memory'),
    spot: column('spot'),
    diskSize: column('disk_size'),
    gpuVendor: column('gpu_vendor'),
    flags: column('flags'),
    cpuArch: column('cpu_arch'),
    providerData: column('provider_data'),
  };
  const onWarning = options.onWarning ?? logCatalogWarning;
  const validProviderData = new Set<string>();
  const row: DecodedCatalogRow = {
    line: 0,
    instanceName: '',
    location: '',
    price: 0,
    cpu: 0,
    memory: 0,
    gpuCount: 0,
    gpuName: null,
    gpuMemory: Number.NaN,
    spot: false,
    diskSize: Number.NaN,
    gpuVendor: null,
    vendorCode: 0,
    flagsText: '',
    cpuArch: 'x86',
    archCode: 0,
    providerDataText: '{}',
  };

  const required = (index: number, name: string): void => {
    if (!scanner.has(index)) throw new RowError(`column '${name}' is missing`);
    if (scanner.isEmpty(index)) throw new RowError(`column '${name}' is empty`);
  };
  const requiredString = (index: number, name: string): string => {
    required(index, name);
    return scanner.field(index);
  };
  const number = (index: number, name: string, integer: boolean): number => {
    const quoted = scanner.quotedValues[index];
    const value =
      quoted === undefined
        ? (integer ? parseInteger : parseDecimal)(text, scanner.starts[index]!, scanner.ends[index]!)
        : (integer ? parseInteger : parseDecimal)(quoted, 0, quoted.length);
    if (Number.isNaN(value)) {
      throw new RowError(
        `column '${name}': cannot parse ${JSON.stringify(scanner.field(index))} as ${integer ? 'an integer' : 'a number'}`,
      );
    }
    return value;
  };
  const requiredNumber = (index: number, name: string, integer: boolean): number => {
    required(index, name);
    return number(index, name, integer);
  };
  const optionalNumber = (index: number, name: string): number =>
    index < 0 || scanner.isEmpty(index) ? Number.NaN : number(index, name, false);
  const optionalString = (index: number): string | null =>
    index < 0 || scanner.isEmpty(index) ? null : scanner.field(index);

  while (scanner.nextRow()) {
    row.line = scanner.line;
    try {
      // Same order as gpuhunt's item_from_row, so the first problem reported is the same.
      row.gpuCount = requiredNumber(columns.gpuCount, 'gpu_count', true);
      let gpuName = optionalString(columns.gpuName);
      const rawVendor = optionalString(columns.gpuVendor);
      let vendorCode = 0;
      if (rawVendor !== null) {
        vendorCode = VENDOR_CODES.get(rawVendor.toLowerCase()) ?? -1;
        if (vendorCode < 0) {
          throw new RowError(
            `column 'gpu_vendor': ${JSON.stringify(rawVendor)} is not one of ${ACCELERATOR_VENDORS.join(', ')}`,
          );
        }
      }
      // Catalogs from before the gpu_vendor column mark TPUs with a name prefix and imply NVIDIA otherwise.
      if (gpuName?.startsWith('tpu-')) {
        gpuName = gpuName.slice(4);
        if (vendorCode === 0) vendorCode = VENDOR_CODES.get('google')!;
      } else if (vendorCode === 0 && row.gpuCount !== 0) {
        vendorCode = VENDOR_CODES.get('nvidia')!;
      }
      row.gpuName = gpuName;
      row.vendorCode = vendorCode;
      row.gpuVendor = vendorCode === 0 ? null : ACCELERATOR_VENDORS[vendorCode - 1]!;
      const rawArch = optionalString(columns.cpuArch);
      if (rawArch === null) {
        row.archCode = 0;
      } else {
        const archCode = ARCH_CODES.get(rawArch.toLowerCase());
        if (archCode === undefined) {
          throw new RowError(
            `column 'cpu_arch': ${JSON.stringify(rawArch)} is not one of ${CPU_ARCHITECTURES.join(', ')}`,
          );
        }
        row.archCode = archCode;
      }
      row.cpuArch = CPU_ARCHITECTURES[row.archCode]!;
      row.instanceName = requiredString(columns.instanceName, 'instance_name');
      row.location = requiredString(columns.location, 'location');
      row.price = requiredNumber(columns.price, 'price', false);
      row.cpu = requiredNumber(columns.cpu, 'cpu', true);
      row.memory = requiredNumber(columns.memory, 'memory', false);
      row.gpuMemory = optionalNumber(columns.gpuMemory, 'gpu_memory');
      required(columns.spot, 'spot');
      row.spot = parseSpot(scanner.field(columns.spot));
      row.diskSize = optionalNumber(columns.diskSize, 'disk_size');
      row.flagsText = normalizeFlags(optionalString(columns.flags));
      const providerDataText = optionalString(columns.providerData);
      if (providerDataText === null || providerDataText === '{}') {
        row.providerDataText = '{}';
      } else {
        // Most catalogs repeat a few provider data values: validate each text once.
        if (!validProviderData.has(providerDataText)) {
          parseProviderData(providerDataText);
          if (validProviderData.size < 10_000) validProviderData.add(providerDataText);
        }
        row.providerDataText = providerDataText;
      }
    } catch (error) {
      if (!(error instanceof RowError)) throw error;
      onWarning({
        ...(options.source !== undefined && { source: options.source }),
        line: row.line,
        message: error.message,
      });
      continue;
    }
    onRow(row);
  }
}

function parseSpot(value: string): boolean {
  if (value === 'True' || value === 'true') return true;
  if (value === 'False' || value === 'false') return false;
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  throw new RowError(`column 'spot': ${JSON.stringify(value)} is not a boolean (expected True or False)`);
}

function normalizeFlags(text: string | null): string {
  if (text === null) return '';
  // Python's str.split(): runs of whitespace separate flags.
  if (/^[^\s]+( [^\s]+)*$/.test(text)) return text;
  return text.split(/\s+/).filter(Boolean).join(' ');
}

function parseProviderData(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RowError(
      `column 'provider_data': invalid JSON ${JSON.stringify(text)}: ${(error as Error).message}`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RowError(`column 'provider_data': ${JSON.stringify(text)} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}
