/**
 * EC2's bulk price list (`/offers/v1.0/aws/AmazonEC2/current/index.csv`), read the way gpuhunt's
 * AWS collector reads it (`providers/aws.py`): five disclaimer lines, a header, then one row per
 * SKU and term. Only Linux, shared-tenancy, used-capacity, hourly USD on-demand rows without
 * preinstalled software survive, minus the retired families; each becomes an on-demand offer
 * whose GPU name and memory are still to be filled from DescribeInstanceTypes.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/** gpuhunt's `EC2_PRICING_URL` without its path: where AWS publishes the price lists. */
export const DEFAULT_AWS_PRICE_LIST_BASE_URL = 'https://pricing.us-east-1.amazonaws.com';
export const AWS_BULK_PRICE_LIST_PATH = '/offers/v1.0/aws/AmazonEC2/current/index.csv';

const DISCLAIMER_LINES = 5;
const DOWNLOAD_ATTEMPTS = 3;

/**
 * Retired families (https://aws.amazon.com/ec2/previous-generation/) and types EC2 no longer
 * lists, which gpuhunt drops whatever their price.
 */
export const PREVIOUS_GENERATION_FAMILIES: readonly string[] = [
  'a1.',
  'c1.',
  'c3.',
  'c4.',
  'g2.',
  'g3.',
  'g3s.',
  'p3.',
  'i2.',
  'm1.',
  'm2.',
  'm3.',
  'p2.',
  'r3.',
  'r4.',
  't1.',
  'cr1.',
  'hs1.',
];

/** Column → the values a kept row may have (gpuhunt's `PRICING_FILTERS`). */
export const PRICING_FILTERS: Readonly<Record<string, readonly string[]>> = {
  TermType: ['OnDemand'],
  Tenancy: ['Shared'],
  'Operating System': ['Linux'],
  CapacityStatus: ['Used'],
  Unit: ['Hrs'],
  Currency: ['USD'],
  'Pre Installed S/W': ['', 'NA'],
  MarketOption: ['OnDemand'],
};

/**
 * Quoted values a raw line must contain to have a chance of passing {@link PRICING_FILTERS}:
 * testing the raw text first skips parsing the 99 % of a multi-gigabyte file that is dropped.
 */
const PREFILTER_SUBSTRINGS = [
  ...new Set(
    Object.values(PRICING_FILTERS)
      .filter((values) => values.length === 1)
      .map((values) => `"${values[0]}"`),
  ),
];

const VALUE_COLUMNS = ['Instance Type', 'Region Code', 'PricePerUnit', 'vCPU', 'Memory', 'GPU'] as const;

/** One kept row: an instance type's on-demand Linux price in a region (or a Local Zone). */
export interface AwsOnDemandRow {
  readonly instanceName: string;
  /** The `Region Code` column: a region, or a Local Zone's location code (`us-west-2-lax-1`). */
  readonly location: string;
  readonly price: number;
  readonly cpu: number;
  /** GiB. */
  readonly memory: number;
  readonly gpuCount: number;
}

/** Fields of one CSV line (RFC 4180 quoting; the price list never breaks a field over lines). */
export function splitCsvLine(line: string): string[] {
  const fields: string[] = [];
  let index = 0;
  while (index <= line.length) {
    if (line[index] === '"') {
      let value = '';
      index += 1;
      for (;;) {
        const quote = line.indexOf('"', index);
        if (quote === -1) throw new Error('unterminated quoted field');
        value += line.slice(index, quote);
        if (line[quote + 1] === '"') {
          value += '"';
          index = quote + 2;
        } else {
          index = quote + 1;
          break;
        }
      }
      fields.push(value);
      if (index < line.length && line[index] !== ',')
        throw new Error(`text after a quoted field at ${index}`);
      index += 1;
    } else {
      const comma = line.indexOf(',', index);
      const end = comma === -1 ? line.length : comma;
      fields.push(line.slice(index, end));
      index = end + 1;
    }
  }
  return fields;
}

/** `"16 GiB"` → 16; anything else is an error (gpuhunt's `_parse_memory`). */
function parseMemory(text: string): number {
  const match = /^([0-9.]+) GiB$/.exec(text);
  const value = match ? Number(match[1]) : Number.NaN;
  if (Number.isNaN(value)) throw new Error(`cannot parse memory ${JSON.stringify(text)}`);
  return value;
}

/** `""` → 0, `"8"` → 8; a fractional GPU (`"0.125"`, g6f) → null: such rows are dropped. */
function parseGpuCount(text: string): number | null {
  if (text === '') return 0;
  const count = Number(text);
  if (Number.isNaN(count)) throw new Error(`cannot parse GPU count ${JSON.stringify(text)}`);
  return count < 1 ? null : Math.trunc(count);
}

function parseCpu(text: string): number {
  if (!/^\d+$/.test(text)) throw new Error(`cannot parse vCPU ${JSON.stringify(text)}`);
  return Number(text);
}

function parsePrice(text: string): number {
  const price = text.trim() === '' ? Number.NaN : Number(text);
  if (Number.isNaN(price)) throw new Error(`cannot parse PricePerUnit ${JSON.stringify(text)}`);
  return price;
}

/**
 * The kept rows of a bulk price list file, in file order. Throws naming the file, line and
 * column when a kept row cannot be read, or when the header lacks a column the filter needs.
 */
export async function readOnDemandRows(file: string): Promise<AwsOnDemandRow[]> {
  const lines = createInterface({
    input: createReadStream(file, 'utf8'),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  const rows: AwsOnDemandRow[] = [];
  let lineNumber = 0;
  let columns: Map<string, number> | undefined;
  let filterColumns: [number, ReadonlySet<string>][] = [];
  let valueColumns: Record<(typeof VALUE_COLUMNS)[number], number> | undefined;
  for await (const line of lines) {
    lineNumber += 1;
    if (lineNumber <= DISCLAIMER_LINES) continue;
    if (!columns) {
      columns = new Map(splitCsvLine(line).map((name, index) => [name, index]));
      const missing = [...Object.keys(PRICING_FILTERS), ...VALUE_COLUMNS].filter(
        (name) => !columns?.has(name),
      );
      if (missing.length > 0) {
        throw new Error(
          `${file}:${lineNumber}: the price list header lacks ${missing.map((name) => JSON.stringify(name)).join(', ')} (is it EC2's bulk CSV, five disclaimer lines then a header?)`,
        );
      }
      const at = (name: string) => columns?.get(name) as number;
      filterColumns = Object.entries(PRICING_FILTERS).map(([name, values]) => [at(name), new Set(values)]);
      valueColumns = Object.fromEntries(VALUE_COLUMNS.map((name) => [name, at(name)])) as typeof valueColumns;
      continue;
    }
    if (!PREFILTER_SUBSTRINGS.every((substring) => line.includes(substring))) continue;
    const fields = splitCsvLine(line);
    const value = (column: number) => fields[column] ?? '';
    const instanceName = value((valueColumns as NonNullable<typeof valueColumns>)['Instance Type']);
    if (PREVIOUS_GENERATION_FAMILIES.some((family) => instanceName.startsWith(family))) continue;
    if (!filterColumns.every(([column, allowed]) => allowed.has(value(column)))) continue;
    const at = valueColumns as NonNullable<typeof valueColumns>;
    let column: (typeof VALUE_COLUMNS)[number] = 'GPU';
    try {
      const gpuCount = parseGpuCount(value(at.GPU));
      if (gpuCount === null) continue;
      column = 'PricePerUnit';
      const price = parsePrice(value(at.PricePerUnit));
      column = 'vCPU';
      const cpu = parseCpu(value(at.vCPU));
      column = 'Memory';
      const memory = parseMemory(value(at.Memory));
      rows.push({ instanceName, location: value(at['Region Code']), price, cpu, memory, gpuCount });
    } catch (error) {
      throw new Error(`${file}:${lineNumber}: column ${JSON.stringify(column)}: ${(error as Error).message}`);
    }
  }
  if (!columns)
    throw new Error(`${file}: the price list ends before its header (line ${DISCLAIMER_LINES + 1})`);
  return rows;
}

/**
 * Downloads the bulk price list to `destination` (through `destination.part`, renamed when
 * complete, so a partial file is never taken for a cached one), trying three times.
 */
export async function downloadBulkPriceList(
  baseUrl: string,
  destination: string,
  options: { signal?: AbortSignal; onProgress?: (message: string) => void } = {},
): Promise<void> {
  const url = new URL(AWS_BULK_PRICE_LIST_PATH, baseUrl).href;
  const partial = `${destination}.part`;
  for (let attempt = 1; ; attempt++) {
    options.onProgress?.(`aws: downloading EC2 prices from ${url} to ${destination}`);
    try {
      const response = await fetch(url, { signal: options.signal });
      if (!response.ok || !response.body) {
        throw new Error(`GET ${url} answered ${response.status} ${response.statusText}`);
      }
      // Streamed to disk: the file is gigabytes, never held in memory whole.
      await pipeline(
        Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
        createWriteStream(partial),
        { signal: options.signal },
      );
      await rename(partial, destination);
      return;
    } catch (error) {
      await rm(partial, { force: true });
      if (options.signal?.aborted || attempt === DOWNLOAD_ATTEMPTS) {
        throw new Error(
          `failed to download the AWS price list after ${attempt} attempt(s): ${(error as Error).message}`,
          { cause: error },
        );
      }
      options.onProgress?.(
        `aws: price list download failed (attempt ${attempt}/${DOWNLOAD_ATTEMPTS}), retrying`,
      );
    }
  }
}
