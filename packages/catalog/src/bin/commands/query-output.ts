import type { CatalogItem } from '../../catalog-item.js';
import { formatPythonFloat } from '../../csv/python-format.js';

/** One offer as `--format json` prints it: the catalog CSV columns (snake_case) with typed values. */
export interface OfferJson {
  provider: string;
  instance_name: string;
  location: string;
  price: number;
  cpu: number;
  memory: number;
  gpu_count: number;
  gpu_name: string | null;
  gpu_memory: number | null;
  spot: boolean;
  disk_size: number | null;
  gpu_vendor: string | null;
  flags: string[];
  cpu_arch: string;
  provider_data: Record<string, unknown>;
}

export function offerToJson(item: CatalogItem): OfferJson {
  return {
    provider: item.provider,
    instance_name: item.instanceName,
    location: item.location,
    price: item.price,
    cpu: item.cpu,
    memory: item.memory,
    gpu_count: item.gpuCount,
    gpu_name: item.gpuName,
    gpu_memory: item.gpuMemory,
    spot: item.spot,
    disk_size: item.diskSize,
    gpu_vendor: item.gpuVendor,
    flags: [...item.flags],
    cpu_arch: item.cpuArch,
    provider_data: item.providerData,
  };
}

/** `2` for 2, `3.8` for 3.8: numbers without a trailing `.0`. */
function formatAmount(value: number): string {
  return formatPythonFloat(value).replace(/\.0$/, '');
}

/** `8xH100 (80GB)`, or `-` for an offer without GPUs. */
export function formatGpu(item: CatalogItem): string {
  if (item.gpuCount <= 0 || !item.gpuName) return '-';
  const memory = item.gpuMemory ? ` (${formatAmount(item.gpuMemory)}GB)` : '';
  return `${item.gpuCount}x${item.gpuName}${memory}`;
}

const COLUMNS: ReadonlyArray<{ title: string; alignRight?: boolean; cell: (item: CatalogItem) => string }> = [
  { title: 'PROVIDER', cell: (item) => item.provider },
  { title: 'INSTANCE', cell: (item) => item.instanceName },
  { title: 'LOCATION', cell: (item) => item.location },
  { title: 'CPU', alignRight: true, cell: (item) => String(item.cpu) },
  { title: 'MEMORY', alignRight: true, cell: (item) => `${formatAmount(item.memory)}GB` },
  { title: 'GPU', cell: formatGpu },
  { title: 'SPOT', cell: (item) => (item.spot ? 'yes' : 'no') },
  { title: 'PRICE ($/h)', alignRight: true, cell: (item) => formatAmount(item.price) },
];

const BOLD = (text: string) => `\u001b[1m${text}\u001b[22m`;

/** Offers as aligned text columns under a header; `color` makes the header bold (ANSI). */
export function formatOffersTable(items: readonly CatalogItem[], options: { color?: boolean } = {}): string {
  const rows = items.map((item) => COLUMNS.map((column) => column.cell(item)));
  const widths = COLUMNS.map((column, index) =>
    Math.max(column.title.length, ...rows.map((row) => (row[index] as string).length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, index) => {
        const width = widths[index] as number;
        return COLUMNS[index]?.alignRight ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  const header = line(COLUMNS.map((column) => column.title));
  return `${[options.color ? BOLD(header) : header, ...rows.map(line)].join('\n')}\n`;
}

/** Whether to colour output: a TTY, and neither NO_COLOR nor TERM=dumb set. */
export function shouldUseColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}
