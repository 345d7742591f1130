/**
 * Catalog benchmarks (catalog-bench.ts: load and query of the bundled snapshot and of synthetic
 * 100k and 200k-row catalogs against their targets, beside gpuhunt's own query when its source is
 * given by `GPUHUNT_SOURCE` or `--gpuhunt=DIR`), then the server benchmarks (server-bench.ts), the proxies' overhead (proxy-bench.ts), the CLI's startup (cli-bench.ts), the AWS
 * backend on the EC2 emulator (aws-bench.ts: plan latency, apply → running) and the plan latency
 * of AWS, GCP and Vast.ai on their emulators, alone and together (clouds-bench.ts).
 * Run with `pnpm bench` (builds first).
 *
 * `--only=catalog`, `--only=server` (with the proxy overhead), `--only=throughput`, `--only=proxy`
 * (proxy-bench.ts), `--only=cli` (CLI startup, cli-bench.ts),
 * `--only=aws` (aws-bench.ts) or `--only=clouds` (clouds-bench.ts) runs one part: e.g.
 * `pnpm exec tsx src/main.ts --only=server`. `--shim-in-process` runs the throughput
 * benchmark's shim inside the server's process (the shim's work then counts as the server's).
 * `--only=throughput --compare-ref=<git ref> [--rounds=N]` runs it alternately on this checkout
 * and on `ref`, and prints the ratio (compare-ref.ts). `--only=scale` (scale-bench.ts: N runs alive
 * at once, on SQLite and on two Postgres replicas) takes `--scale-runs=100,1000` (default 100,
 * 1,000 and 10,000) and `--scale-db=sqlite|postgres` (default both); it is not part of `all`.
 */
import { benchmarkAws } from './aws-bench.js';
import { benchmarkCatalogs } from './catalog-bench.js';
import { benchmarkCliStartup } from './cli-bench.js';
import { benchmarkClouds } from './clouds-bench.js';
import { compareThroughputWithRef } from './compare-ref.js';
import { gpuhuntSourceOf } from './gpuhunt-reference.js';
import { benchmarkProxyOverhead } from './proxy-bench.js';
import { benchmarkScale, scaleDatabasesOf, scaleRunsOf } from './scale-bench.js';
import { benchmarkServer } from './server-bench.js';

const PARTS = ['all', 'catalog', 'server', 'throughput', 'scale', 'proxy', 'cli', 'aws', 'clouds'] as const;
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
  if (part === 'scale') {
    await benchmarkScale({ runs: scaleRunsOf(argv), databases: scaleDatabasesOf(argv) });
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
  await benchmarkCatalogs(gpuhuntSourceOf(argv, process.env));
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
