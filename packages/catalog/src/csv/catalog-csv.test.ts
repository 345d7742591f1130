import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem } from '../catalog-item.js';
import {
  CATALOG_CSV_COLUMNS,
  type CatalogWarning,
  formatCatalogCsv,
  parseCatalogCsv,
} from './catalog-csv.js';

// Cases ported from gpuhunt's src/tests/_internal/test_storage.py, plus byte-exact output
// checked against a file written by Python's csv module with gpuhunt's item_to_row.

function catalogItem(overrides: Partial<CatalogItem> = {}): CatalogItem {
  return createCatalogItem({
    provider: 'test',
    instanceName: 'test-instance',
    location: 'eu-west-1',
    price: 1,
    cpu: 1,
    memory: 32,
    ...overrides,
  });
}

type Row = Partial<Record<(typeof CATALOG_CSV_COLUMNS)[number], string>>;

/** A CSV text with the given columns: gpuhunt's `row()` helper defaults for the v1 columns. */
function csvOf(rows: Row[], columns: readonly string[] = Object.keys(defaultRow())): string {
  const lines = [columns.join(',')];
  for (const row of rows) {
    const full: Record<string, string> = { ...defaultRow(), ...row };
    lines.push(columns.map((column) => full[column] ?? '').join(','));
  }
  return `${lines.join('\n')}\n`;
}

function defaultRow(): Required<Pick<Row, 'instance_name' | 'location' | 'price' | 'cpu' | 'memory'>> & Row {
  return {
    instance_name: 'test-instance',
    location: 'eu-west-1',
    price: '1.0',
    cpu: '1',
    memory: '32.0',
    gpu_count: '0',
    gpu_name: '',
    gpu_memory: '',
    spot: 'False',
    disk_size: '',
  };
}

function parse(text: string, warnings: CatalogWarning[] = []): CatalogItem[] {
  return parseCatalogCsv(text, { provider: 'test', source: 'test.csv', onWarning: (w) => warnings.push(w) });
}

const fixture = readFileSync(new URL('./__fixtures__/python-written.csv', import.meta.url), 'utf8');

const fixtureItems: CatalogItem[] = [
  catalogItem({
    instanceName: 'a2-highgpu-1g',
    location: 'us-central1-a',
    price: 3.67339,
    cpu: 12,
    memory: 85,
    gpuCount: 1,
    gpuName: 'A100',
    gpuMemory: 40,
    gpuVendor: 'nvidia',
    providerData: { is_dws_calendar_mode: false },
  }),
  catalogItem({
    instanceName: 'p5.48xlarge',
    location: 'us-east-1',
    price: 98.32,
    cpu: 192,
    memory: 2048,
    gpuCount: 8,
    gpuName: 'H100',
    gpuMemory: 80,
    spot: true,
    gpuVendor: 'nvidia',
    flags: ['f1', 'f2'],
  }),
  catalogItem({ instanceName: 'm7i.large', price: 0.1, cpu: 2, memory: 8, diskSize: 100 }),
  catalogItem({
    instanceName: 'tiny',
    location: 'loc',
    price: 1e-5,
    memory: 0.5,
    cpuArch: 'arm',
    providerData: { k: 1, f: 0.25, small: 1e-7, n: null, t: true, list: [1, 2.5, 'x'], nested: { a: [] } },
  }),
  catalogItem({
    instanceName: 'name, with "quotes"',
    location: 'multi\nline',
    price: 1152,
    cpu: 4,
    memory: 16,
    providerData: { s: 'café "q" \\ \t\u0001\u007f 😀' },
  }),
  catalogItem({
    instanceName: 'v5litepod-4',
    location: 'us-west4-a',
    price: 123456789.123,
    cpu: 112,
    memory: 192,
    gpuCount: 1,
    gpuName: 'v5litepod-4',
    gpuMemory: 64,
    diskSize: 1e16,
    gpuVendor: 'google',
    flags: ['gcp-g4-preview'],
  }),
  catalogItem({
    instanceName: 'neg',
    location: 'loc',
    price: 2.5e-5,
    memory: 1234567890123456,
    diskSize: 0.0001,
  }),
];

describe('formatCatalogCsv', () => {
  it('writes all fields like item_to_row (test_all_fields)', () => {
    const text = formatCatalogCsv([
      catalogItem({
        cpuArch: 'arm',
        gpuVendor: 'nvidia',
        gpuCount: 1,
        gpuName: 'A10',
        gpuMemory: 24,
        diskSize: 100,
        flags: ['f1', 'f2'],
        providerData: { custom_prop: 42 },
      }),
    ]);
    expect(text).toBe(
      `${CATALOG_CSV_COLUMNS.join(',')}\r\n` +
        'test-instance,eu-west-1,1.0,1,32.0,1,A10,24.0,False,100.0,nvidia,f1 f2,arm,"{""custom_prop"": 42}"\r\n',
    );
  });

  it('writes unset optionals as empty fields', () => {
    const line = formatCatalogCsv([catalogItem()]).split('\r\n')[1];
    expect(line).toBe('test-instance,eu-west-1,1.0,1,32.0,0,,,False,,,,x86,{}');
  });

  it('is byte-identical to a file written by Python', () => {
    expect(formatCatalogCsv(fixtureItems)).toBe(fixture);
  });

  it('writes only the header for no items', () => {
    expect(formatCatalogCsv([])).toBe(
      'instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags,cpu_arch,provider_data\r\n',
    );
  });
});

describe('parseCatalogCsv', () => {
  it('reads a file written by Python', () => {
    const warnings: CatalogWarning[] = [];
    expect(parse(fixture, warnings)).toEqual(fixtureItems);
    expect(warnings).toEqual([]);
  });

  it('round-trips (test_round_trip)', () => {
    const items = [
      catalogItem(),
      catalogItem({
        price: 12,
        gpuCount: 8,
        gpuName: 'H100',
        gpuMemory: 80,
        gpuVendor: 'nvidia',
        spot: true,
        diskSize: 500,
        cpuArch: 'arm',
        flags: ['f1'],
        providerData: { k: 1 },
      }),
    ];
    expect(parse(formatCatalogCsv(items))).toEqual(items);
  });

  it('defaults columns missing in historical catalogs', () => {
    const [item] = parse(csvOf([{}]));
    expect(item).toMatchObject({ cpuArch: 'x86', gpuVendor: null, flags: [], providerData: {} });
  });

  it('treats a GPU without vendor as NVIDIA', () => {
    expect(parse(csvOf([{ gpu_count: '1', gpu_name: 'A100' }]))[0]?.gpuVendor).toBe('nvidia');
  });

  it('strips the legacy tpu- prefix and implies Google', () => {
    const [item] = parse(csvOf([{ gpu_count: '1', gpu_name: 'tpu-v3' }]));
    expect(item?.gpuName).toBe('v3');
    expect(item?.gpuVendor).toBe('google');
  });

  it('finds columns by header name in any order, with CRLF', () => {
    const columns = [...CATALOG_CSV_COLUMNS].reverse();
    const text = csvOf(
      [{ gpu_vendor: 'AMD', gpu_count: '2', gpu_name: 'MI300X', cpu_arch: 'ARM', spot: 'TRUE' }],
      columns,
    );
    const [item] = parse(text.replaceAll('\n', '\r\n'));
    expect(item).toMatchObject({
      gpuVendor: 'amd',
      gpuCount: 2,
      gpuName: 'MI300X',
      cpuArch: 'arm',
      spot: true,
    });
  });

  it('skips empty lines and reads a last line without a line end', () => {
    const text = `${CATALOG_CSV_COLUMNS.slice(0, 9).join(',')}\n\na,l,1.0,1,1.0,0,,,False\n\nb,l,2.0,1,1.0,0,,,false`;
    expect(parse(text).map((i) => i.instanceName)).toEqual(['a', 'b']);
  });

  it('returns nothing for an empty text and throws for a text that is not a catalog', () => {
    expect(parse('')).toEqual([]);
    expect(() => parse('<html>Access denied</html>\n')).toThrow(/required column.*instance_name/);
  });

  it('skips a malformed row (test_malformed_row_is_skipped)', () => {
    const header = CATALOG_CSV_COLUMNS.join(',');
    const good = 'i,loc,1.0,1,1.0,0,,,False,,,,x86,{}';
    const bad = ',loc,1.0,1,1.0,0,,,False,,,,x86,{}';
    const warnings: CatalogWarning[] = [];
    expect(parse(`${header}\n${bad}\n${good}\n`, warnings).map((i) => i.instanceName)).toEqual(['i']);
    expect(warnings).toEqual([{ source: 'test.csv', line: 2, message: "column 'instance_name' is empty" }]);
  });

  it.each<[string, Row, string]>([
    ['empty price', { price: '' }, "column 'price' is empty"],
    ['bad price', { price: 'cheap' }, `column 'price': cannot parse "cheap" as a number`],
    ['fractional cpu', { cpu: '1.5' }, `column 'cpu': cannot parse "1.5" as an integer`],
    ['bad gpu_count', { gpu_count: 'x' }, `column 'gpu_count': cannot parse "x" as an integer`],
    ['bad spot', { spot: 'yes' }, `column 'spot': "yes" is not a boolean (expected True or False)`],
    ['bad vendor', { gpu_vendor: 'acme' }, `column 'gpu_vendor': "acme" is not one of`],
    ['bad arch', { cpu_arch: 'mips' }, `column 'cpu_arch': "mips" is not one of x86, arm`],
    ['bad memory', { gpu_memory: '80GB' }, `column 'gpu_memory': cannot parse "80GB" as a number`],
    ['bad json', { provider_data: '{oops}' }, `column 'provider_data': invalid JSON "{oops}"`],
    ['json not an object', { provider_data: '[1]' }, `column 'provider_data': "[1]" is not a JSON object`],
  ])('reports %s with its line and column', (_name, row, message) => {
    const warnings: CatalogWarning[] = [];
    const text = csvOf([{ instance_name: 'ok' }, { instance_name: 'ok' }, row], CATALOG_CSV_COLUMNS);
    expect(parse(text, warnings)).toHaveLength(2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.line).toBe(4);
    expect(warnings[0]?.source).toBe('test.csv');
    expect(warnings[0]?.message).toContain(message);
  });

  it('reports a short row as missing columns', () => {
    const warnings: CatalogWarning[] = [];
    const text = `${CATALOG_CSV_COLUMNS.join(',')}\na,l,1.0,1,1.0,0\n`;
    expect(parse(text, warnings)).toEqual([]);
    expect(warnings[0]?.message).toBe("column 'spot' is missing");
  });

  it('counts physical lines across quoted line breaks', () => {
    const warnings: CatalogWarning[] = [];
    const header = CATALOG_CSV_COLUMNS.join(',');
    const text = `${header}\r\n"multi\r\nline\nname",l,1.0,1,1.0,0,,,False,,,,,\r\nbad,l,1.0,1,1.0,0,,,maybe,,,,,\r\n`;
    const items = parse(text, warnings);
    expect(items.map((i) => i.instanceName)).toEqual(['multi\r\nline\nname']);
    expect(warnings).toEqual([
      {
        source: 'test.csv',
        line: 5,
        message: `column 'spot': "maybe" is not a boolean (expected True or False)`,
      },
    ]);
  });

  it('accepts numbers the way Python does', () => {
    const [item] = parse(
      csvOf([{ price: ' 1.5e-3 ', cpu: '+8', memory: '.5', gpu_memory: '', disk_size: '1E2' }]),
    );
    expect(item).toMatchObject({ price: 0.0015, cpu: 8, memory: 0.5, diskSize: 100 });
  });

  it('splits flags on whitespace and keeps a byte order mark out of the header', () => {
    const text = `\ufeff${csvOf([{ flags: ' a  b\tc ' }], CATALOG_CSV_COLUMNS)}`;
    expect(parse(text)[0]?.flags).toEqual(['a', 'b', 'c']);
  });

  it('logs to console.warn by default', () => {
    const warn = console.warn;
    const messages: unknown[] = [];
    console.warn = (message: unknown) => messages.push(message);
    try {
      parseCatalogCsv(csvOf([{ price: '' }]), { provider: 'aws', source: 'aws.csv' });
    } finally {
      console.warn = warn;
    }
    expect(messages).toEqual(["Skipping malformed catalog row at aws.csv:2: column 'price' is empty"]);
  });
});
