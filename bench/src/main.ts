/**
 * Catalog benchmarks: load time and query time of the bundled snapshot and of a
 * synthetic 200,000-row catalog, against the targets (load < 300 ms, query < 5 ms),
 * then the server benchmarks (server-bench.ts), the proxies' overhead (proxy-bench.ts), the CLI's startup (cli-bench.ts), the AWS
 * backend on the EC2 emulator (aws-bench.ts: plan latency, apply → running) and the plan latency
 * of AWS, GCP and Vast.ai on their emulators, alone and together (clouds-bench.ts).
 * Run with `pnpm bench` (builds first). gpuhunt itself is not runnable here (no
 * PyPI), so there is no reference column.
 *
 * `--only=catalog`, `--only=server` (with the proxy overhead), `--only=throughput`, `--only=proxy`
 * (proxy-bench.ts), `--only=cli` (CLI startup, cli-bench.ts),
 * `--only=aws` (aws-bench.ts) or `--only=clouds` (clouds-bench.ts) runs one part: e.g.
 * `pnpm exec tsx src/main.ts --only=server`. `--shim-in-process` runs the throughput
 * benchmark's shim inside the server's process (the shim's work then counts as the server's).
 * `--only=throughput --compare-ref=<git ref> [--rounds=N]` runs it alternately on this checkout
 * and on `ref`, and prints the ratio (compare-ref.ts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  bundledSource,
  Catalog,
  type CatalogSource,
  directorySource,
  formatCatalogCsv,
  type QueryFilterInput,
} from '@dstack/catalog';
import { benchmarkAws } from './aws-bench.js';
import { benchmarkCliStartup } from './cli-bench.js';
import { benchmarkClouds } from './clouds-bench.js';
import { compareThroughputWithRef } from './compare-ref.js';
import { benchmarkProxyOverhead } from './proxy-bench.js';
import { printTable, type Row } from './report-table.js';
import { benchmarkServer } from './server-bench.js';
import { measure } from './stats.js';
import { generateSyntheticCatalog } from './synthetic-catalog.js';

const LOAD_RUNS = 7;
const QUERY_RUNS = 50;
const QUERY_WARMUPS = 5;
const LOAD_TARGET_MS = 300;
const QUERY_TARGET_MS = 5;
const SYNTHETIC_ROWS = 200_000;
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

async function benchmarkCatalog(label: string, makeSource: () => CatalogSource): Promise<Row[]> {
  const load = await measure(
    async () => {
      // A fresh catalog each run: parse and build the in-memory store from scratch.
      const catalog = new Catalog({ source: makeSource(), refreshIntervalMs: 0 });
      await catalog.load();
      return catalog;
    },
    { runs: LOAD_RUNS, warmups: 1 },
  );
  const catalog = load.result;
  const rows = catalog.providers().reduce((sum, provider) => sum + (provider.rows ?? 0), 0);
  const result: Row[] = [
    {
      name: `${label}: load (${rows.toLocaleString('en-US')} rows)`,
      timing: load.timing,
      results: '-',
      targetMs: LOAD_TARGET_MS,
    },
  ];
  for (const [name, filter] of QUERIES) {
    // What a plan needs: every match found and ordered, the cheapest page built as objects.
    const query = await measure(async () => (await catalog.select(filter)).take(PAGE_SIZE), {
      runs: QUERY_RUNS,
      warmups: QUERY_WARMUPS,
    });
    const all = await measure(() => catalog.query(filter), { runs: QUERY_RUNS, warmups: QUERY_WARMUPS });
    result.push(
      {
        name: `${label}: query ${name}, cheapest ${PAGE_SIZE}`,
        timing: query.timing,
        results: all.result.length,
        targetMs: QUERY_TARGET_MS,
      },
      {
        name: `${label}: query ${name}, all as objects`,
        timing: all.timing,
        results: all.result.length,
      },
    );
  }
  return result;
}

const PARTS = ['all', 'catalog', 'server', 'throughput', 'proxy', 'cli', 'aws', 'clouds'] as const;
type Part = (typeof PARTS)[number];

function selectedPart(argv: readonly string[]): Part {
  const flag = argv.find((argument) => argument.startsWith('--only='));
  const value = flag ? flag.slice('--only='.length) : 'all';
  if (!(PARTS as readonly string[]).includes(value)) {
    throw new Error(`--only: expected one of ${PARTS.join(', ')}, got "${value}"`);
  }
  return value as Part;
}

/** The value of `--name=value`, or undefined. */
function flagValue(argv: readonly string[], name: string): string | undefined {
  return argv.find((argument) => argument.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function roundsOf(argv: readonly string[]): number {
  const value = flagValue(argv, 'rounds') ?? '3';
  const rounds = Number(value);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds: expected a whole number >= 1, got "${value}"`);
  return rounds;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const part = selectedPart(argv);
  const shimProcess = !argv.includes('--shim-in-process');
  const compareRef = flagValue(argv, 'compare-ref');
  if (compareRef !== undefined && part !== 'throughput') {
    throw new Error('--compare-ref: only with --only=throughput');
  }
  console.log(`node ${process.version}, ${process.platform}/${process.arch}`);
  if (compareRef !== undefined) {
    await compareThroughputWithRef(compareRef, {
      rounds: roundsOf(argv),
      extraArgs: shimProcess ? [] : ['--shim-in-process'],
    });
    return;
  }
  if (part === 'cli') {
    await benchmarkCliStartup();
    return;
  }
  if (part === 'aws') {
    await benchmarkAws();
    return;
  }
  if (part === 'clouds') {
    await benchmarkClouds();
    return;
  }
  if (part === 'proxy') {
    await benchmarkProxyOverhead();
    return;
  }
  if (part === 'server' || part === 'throughput') {
    await benchmarkServer({ latency: part === 'server', shimProcess });
    if (part === 'server') await benchmarkProxyOverhead();
    return;
  }
  console.log(
    'status compares the median with the target; gpuhunt is not runnable here (no PyPI): no reference.\n',
  );
  const rows = await benchmarkCatalog('bundled snapshot', bundledSource);

  const directory = await mkdtemp(path.join(tmpdir(), 'dstack-bench-'));
  try {
    const items = generateSyntheticCatalog({ rows: SYNTHETIC_ROWS, seed: 42, provider: 'synthetic' });
    await writeFile(path.join(directory, 'synthetic.csv'), formatCatalogCsv(items));
    rows.push(...(await benchmarkCatalog('synthetic 200k', () => directorySource(directory))));
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
  printTable(rows);
  if (part === 'all') {
    await benchmarkServer({ latency: true, shimProcess });
    await benchmarkProxyOverhead();
    console.log('');
    await benchmarkCliStartup();
    await benchmarkAws();
    await benchmarkClouds();
  }
}

await main();
