import { type Command, InvalidArgumentError, Option } from 'commander';
import { ACCELERATOR_VENDORS, CPU_ARCHITECTURES } from '../../gpus/known-accelerators.js';
import type { QueryOptions } from './query-options.js';

const NUMBER_FLAGS: ReadonlyArray<readonly [flag: string, description: string, integer: boolean]> = [
  ['min-cpu', 'minimum vCPUs', true],
  ['max-cpu', 'maximum vCPUs', true],
  ['min-memory', 'minimum RAM, GiB', false],
  ['max-memory', 'maximum RAM, GiB', false],
  ['min-gpu-count', 'minimum number of GPUs (0 lets CPU-only offers through GPU filters)', true],
  ['max-gpu-count', 'maximum number of GPUs (0: CPU-only)', true],
  ['min-gpu-memory', 'minimum memory per GPU, GiB', false],
  ['max-gpu-memory', 'maximum memory per GPU, GiB', false],
  ['min-total-gpu-memory', 'minimum memory of all GPUs, GiB', false],
  ['max-total-gpu-memory', 'maximum memory of all GPUs, GiB', false],
  ['min-disk-size', 'minimum disk, GiB (offers without a fixed disk always pass)', true],
  ['max-disk-size', 'maximum disk, GiB', true],
  ['min-price', 'minimum price, USD per hour', false],
  ['max-price', 'maximum price, USD per hour', false],
];

/** A commander parser for a number flag; the error names the flag (commander adds "option '--x <n>'"). */
export function parseNumberOption(flag: string, integer: boolean): (value: string) => number {
  return (value: string) => {
    const number = value.trim() === '' ? Number.NaN : Number(value);
    if (!Number.isFinite(number) || (integer && !Number.isInteger(number)) || number < 0) {
      throw new InvalidArgumentError(
        `--${flag} expects ${integer ? 'a whole number' : 'a number'} ≥ 0, got "${value}"`,
      );
    }
    return number;
  };
}

/** Accumulates repeatable, comma-separable list values: `--provider aws,gcp --provider vastai`. */
export function collectList(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  ];
}

export function registerQueryCommand(program: Command): void {
  const command = program
    .command('query')
    .description('list offers matching a filter, cheapest first')
    .addOption(
      new Option('--provider <names...>', 'providers, repeatable or comma-separated').argParser(collectList),
    )
    .addOption(new Option('--cpu-arch <arch>', 'CPU architecture').choices(CPU_ARCHITECTURES));
  for (const [flag, description, integer] of NUMBER_FLAGS) {
    command.addOption(new Option(`--${flag} <n>`, description).argParser(parseNumberOption(flag, integer)));
  }
  command
    .option('--min-compute-capability <major.minor>', 'minimum NVIDIA compute capability, such as 8.0')
    .option('--max-compute-capability <major.minor>', 'maximum NVIDIA compute capability')
    .addOption(new Option('--gpu-vendor <vendor>', 'GPU vendor').choices(ACCELERATOR_VENDORS))
    .addOption(
      new Option('--gpu-name <names...>', 'GPU names, repeatable or comma-separated').argParser(collectList),
    )
    .option('--spot', 'spot offers only')
    .option('--no-spot', 'on-demand offers only (neither flag: both)')
    .addOption(
      new Option(
        '--allowed-flags <flags...>',
        "offer flags you accept; offers with other flags are hidden ('' hides every flagged offer)",
      ).argParser(collectList),
    )
    .option(
      '--catalog-dir <dir>',
      'read {provider}.csv files from this directory instead of the bundled snapshot',
    )
    .option('--catalog-url <url>', 'download the catalog from this gpuhunt-v3-style base URL')
    .addOption(
      new Option('--limit <n>', 'print at most n offers').argParser(parseNumberOption('limit', true)),
    )
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'json']).default('table'))
    .addHelpText(
      'after',
      `
Examples:
  dstack-catalog query --gpu-name H100
  dstack-catalog query --gpu-name A100 --min-gpu-memory 80 --spot --max-price 3
  dstack-catalog query --max-gpu-count 0 --min-cpu 16 --provider aws --limit 5 --format json
  dstack-catalog query --provider vastai --gpu-name RTX4090   (live offers; needs @dstack/backend-vastai)
`,
    )
    // The catalog, its sources and the output load when the command runs, not for `--help`.
    .action(async (options: QueryOptions) => (await import('./run-query.js')).runQuery(options));
}
