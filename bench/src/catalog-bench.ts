/**
 * Catalog benchmarks: load time and query time of the bundled snapshot and of synthetic catalogs
 * of 100,000 and 200,000 rows, against the targets (load < 300 ms, query < 5 ms), each query next
 * to gpuhunt's own on the same files when its source is given (gpuhunt-reference.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BUNDLED_SNAPSHOT_DIRECTORY,
  Catalog,
  directorySource,
  formatCatalogCsv,
  type QueryFilterInput,
} from '@dstack/catalog';
import { type GpuhuntTimings, timeGpuhuntQueries } from './gpuhunt-reference.js';
import { printTable, type Row } from './report-table.js';
import { measure, type Timing } from './stats.js';
import { generateSyntheticCatalog } from './synthetic-catalog.js';

const LOAD_RUNS = 7;
const QUERY_RUNS = 50;
const QUERY_WARMUPS = 5;
/** gpuhunt takes about a second for a query of 200k rows: fewer runs keep the bench short. */
const GPUHUNT_RUNS = 7;
const GPUHUNT_WARMUPS = 1;
const LOAD_TARGET_MS = 300;
const QUERY_TARGET_MS = 5;
const SYNTHETIC_SIZES = [100_000, 200_000];
/** Offers a plan shows (dstack's CLI lists the cheapest few). */
const PAGE_SIZE = 50;

const QUERIES: ReadonlyArray<readonly [string, QueryFilterInput]> = [
  ['(a) any GPU >= 24 GB', { minGpuCount: 1, minGpuMemory: 24 }],
  [
    '(b) A100 80 GB spot <= $3',
    { gpuName: ['A100'], minGpuMemory: 80, maxGpuMemory: 80, spot: true, maxPrice: 3 },
  ],
  ['(c) CPU-only >= 16 vCPU', { maxGpuCount: 0, minCpu: 16 }],
];

/** gpuhunt's median over ours, with gpuhunt's median: the reference column. */
function versus(reference: Timing | undefined, ours: Timing): string {
  if (reference === undefined) return 'no reference';
  return `gpuhunt ${reference.medianMs.toFixed(1)} ms, ${(reference.medianMs / ours.medianMs).toFixed(1)}×`;
}

function geometricMean(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);
}

/** The rows of one catalog folder, and the ratios to gpuhunt of its queries (empty without it). */
async function benchmarkCatalog(
  label: string,
  directory: string,
  gpuhunt: GpuhuntTimings | undefined,
): Promise<{ rows: Row[]; cheapestRatios: number[]; allRatios: number[] }> {
  const load = await measure(
    async () => {
      // A fresh catalog each run: parse and build the in-memory store from scratch.
      const catalog = new Catalog({ source: directorySource(directory), refreshIntervalMs: 0 });
      await catalog.load();
      return catalog;
    },
    { runs: LOAD_RUNS, warmups: 1 },
  );
  const catalog = load.result;
  const size = catalog.providers().reduce((sum, provider) => sum + (provider.rows ?? 0), 0);
  const rows: Row[] = [
    {
      name: `${label}: load (${size.toLocaleString('en-US')} rows)`,
      timing: load.timing,
      results: '-',
      targetMs: LOAD_TARGET_MS,
    },
  ];
  const cheapestRatios: number[] = [];
  const allRatios: number[] = [];
  for (const [name, filter] of QUERIES) {
    // What a plan needs: every match found and ordered, the cheapest page built as objects.
    const cheapest = await measure(async () => (await catalog.select(filter)).take(PAGE_SIZE), {
      runs: QUERY_RUNS,
      warmups: QUERY_WARMUPS,
    });
    // What gpuhunt's query returns, and what the server's offers are built from.
    const all = await measure(() => catalog.query(filter), { runs: QUERY_RUNS, warmups: QUERY_WARMUPS });
    const reference = gpuhunt?.queries.get(name);
    if (reference && reference.results !== all.result.length) {
      throw new Error(
        `${label} ${name}: gpuhunt found ${reference.results} rows, we found ${all.result.length}`,
      );
    }
    if (reference) {
      cheapestRatios.push(reference.timing.medianMs / cheapest.timing.medianMs);
      allRatios.push(reference.timing.medianMs / all.timing.medianMs);
    }
    rows.push(
      {
        name: `${label}: query ${name}, cheapest ${PAGE_SIZE}`,
        timing: cheapest.timing,
        results: all.result.length,
        targetMs: QUERY_TARGET_MS,
        reference: versus(reference?.timing, cheapest.timing),
      },
      {
        name: `${label}: query ${name}, all as objects`,
        timing: all.timing,
        results: all.result.length,
        reference: versus(reference?.timing, all.timing),
      },
    );
  }
  return { rows, cheapestRatios, allRatios };
}

/** The catalog part of `pnpm bench`; `gpuhuntSource` is the folder holding gpuhunt's package. */
export async function benchmarkCatalogs(gpuhuntSource: string | undefined): Promise<void> {
  console.log(
    gpuhuntSource
      ? `status compares the median with the target; reference: gpuhunt's Catalog.query from ${gpuhuntSource} (python3), same files and queries, its median over ours.\n`
      : 'status compares the median with the target; no gpuhunt source given (GPUHUNT_SOURCE or --gpuhunt=DIR): no reference.\n',
  );
  const folders: Array<[string, string]> = [['bundled snapshot', BUNDLED_SNAPSHOT_DIRECTORY]];
  const scratch = await mkdtemp(path.join(tmpdir(), 'dstack-bench-'));
  const table: Row[] = [];
  const summary: string[] = [];
  try {
    for (const rows of SYNTHETIC_SIZES) {
      const directory = path.join(scratch, String(rows));
      await mkdir(directory);
      // Named as a provider gpuhunt knows, so that gpuhunt loads the same file.
      const items = generateSyntheticCatalog({ rows, seed: 42, provider: 'aws' });
      await writeFile(path.join(directory, 'aws.csv'), formatCatalogCsv(items));
      folders.push([`synthetic ${rows / 1000}k`, directory]);
    }
    for (const [label, directory] of folders) {
      const gpuhunt = gpuhuntSource
        ? await timeGpuhuntQueries(gpuhuntSource, directory, QUERIES, {
            runs: GPUHUNT_RUNS,
            warmups: GPUHUNT_WARMUPS,
          })
        : undefined;
      const result = await benchmarkCatalog(label, directory, gpuhunt);
      table.push(...result.rows);
      if (gpuhunt) {
        summary.push(
          `  ${label}: ${geometricMean(result.allRatios).toFixed(1)}× gpuhunt all as objects, ${geometricMean(result.cheapestRatios).toFixed(1)}× for the cheapest ${PAGE_SIZE} (geometric means over the ${QUERIES.length} queries)`,
        );
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  printTable(table);
  if (summary.length > 0) console.log(['', 'Against gpuhunt (its median over ours):', ...summary].join('\n'));
}
