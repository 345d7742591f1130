/**
 * CLI startup: wall time of `dstack --help` and `dstack ps --help` (a fresh node process each),
 * next to bare `node -e 0` measured in the same rounds, so that a loaded machine slows both.
 * Target: at most 2.5 times bare node's median, i.e. 150 ms where bare node starts in 60 ms (the
 * ratio is the status, as it holds on a loaded machine where both slow down).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { summarise, type Timing } from './stats.js';

const BIN = fileURLToPath(new URL('../../packages/cli/dist/bin/dstack.js', import.meta.url));
const ROUNDS = 15;
const WARMUP_ROUNDS = 2;
const TARGET_RATIO = 2.5;

interface Subject {
  name: string;
  args: readonly string[];
}

const SUBJECTS: readonly Subject[] = [
  { name: 'node -e 0 (bare node)', args: ['-e', '0'] },
  { name: 'dstack --help', args: [BIN, '--help'] },
  { name: 'dstack ps --help', args: [BIN, 'ps', '--help'] },
];

function timeOnce(subject: Subject): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, subject.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const elapsed = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(`${subject.name} exited with ${result.status}: ${result.stderr.toString()}`);
  }
  return elapsed;
}

export function benchmarkCliStartup(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: build first (pnpm build)`);
  const durations = SUBJECTS.map((): number[] => []);
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    for (const [index, subject] of SUBJECTS.entries()) {
      const elapsed = timeOnce(subject);
      if (round >= WARMUP_ROUNDS) durations[index]!.push(elapsed);
    }
  }
  const timings: Timing[] = durations.map(summarise);
  const bare = timings[0]!.medianMs;
  console.log(
    `CLI startup (${ROUNDS} rounds, each a fresh process; target <= ${TARGET_RATIO}x bare node: 150 ms where node starts in 60 ms)`,
  );
  const header = ['command', 'median', 'p90', 'x bare node', 'status'];
  const lines = SUBJECTS.map((subject, index) => {
    const timing = timings[index]!;
    const ratio = timing.medianMs / bare;
    const status = index === 0 ? '-' : ratio <= TARGET_RATIO ? 'PASS' : 'MISS';
    return [
      subject.name,
      `${timing.medianMs.toFixed(0)} ms`,
      `${timing.p90Ms.toFixed(0)} ms`,
      `${ratio.toFixed(2)}x`,
      status,
    ];
  });
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => line[column]!.length)),
  );
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!)))
      .join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
}
