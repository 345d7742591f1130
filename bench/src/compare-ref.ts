/**
 * `--compare-ref=<git ref>` with `--only=throughput`: the throughput bench of this checkout and
 * of `ref`, run alternately in one sitting (`--rounds=N`, 3 by default; the first side swaps each
 * round), so a change shows as a ratio rather than as an absolute figure that moves with the
 * machine's load. The reference is built once per commit in a worktree under the system's temp
 * folder (`git worktree add --detach`, `pnpm install`, `pnpm build`) and reused after.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarise } from './stats.js';

const REPOSITORY = path.resolve(fileURLToPath(import.meta.url), '../../..');
/** Written last into a reference worktree whose install and build finished. */
const READY_MARKER = '.bench-reference-ready';

/** One throughput run's figures, read from the line the bench prints. */
export interface ThroughputFigures {
  runsPerSecond: number;
  toRunningP50Ms: number;
  cpuSeconds: number;
}

const FIGURES = /([\d.]+) runs\/s to done .*?apply→running p50 (\d+) ms.*?, CPU ([\d.]+) s/;

/** The figures of a throughput bench's output, or an error quoting it. */
export function parseThroughputOutput(output: string): ThroughputFigures {
  const match = FIGURES.exec(output);
  if (!match) throw new Error(`no throughput line in the bench's output:\n${output.slice(-2000)}`);
  return {
    runsPerSecond: Number(match[1]),
    toRunningP50Ms: Number(match[2]),
    cpuSeconds: Number(match[3]),
  };
}

function run(command: string, args: readonly string[], cwd: string): void {
  execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** A built checkout of `ref`'s commit (made on the first call for that commit). */
function referenceCheckout(ref: string): { commit: string; directory: string } {
  const commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], {
    cwd: REPOSITORY,
    encoding: 'utf8',
  }).trim();
  const directory = path.join(tmpdir(), `dstack-bench-ref-${commit.slice(0, 12)}`);
  if (existsSync(path.join(directory, READY_MARKER))) return { commit, directory };
  if (existsSync(directory)) {
    // An install or build that did not finish: start over.
    run('git', ['worktree', 'remove', '--force', directory], REPOSITORY);
    rmSync(directory, { recursive: true, force: true });
  }
  console.log(`building the reference ${ref} (${commit.slice(0, 12)}) in ${directory}`);
  run('git', ['worktree', 'add', '--quiet', '--detach', directory, commit], REPOSITORY);
  run('pnpm', ['install', '--frozen-lockfile', '--prefer-offline'], directory);
  run('pnpm', ['turbo', 'run', 'build', '--output-logs=errors-only'], directory);
  writeFileSync(path.join(directory, READY_MARKER), `${commit}\n`);
  return { commit, directory };
}

/**
 * The throughput bench of the checkout at `repository`, run again once when it fails: an older
 * reference's cheap-route probe could lose the end of its output (it was read on 'exit').
 */
async function throughputOf(repository: string, extraArgs: readonly string[]): Promise<ThroughputFigures> {
  try {
    return await throughputOnce(repository, extraArgs);
  } catch (error) {
    console.log(
      `  the bench in ${repository} failed, running it again: ${(error as Error).message.split('\n')[0]}`,
    );
    return throughputOnce(repository, extraArgs);
  }
}

/** Runs the throughput bench of the checkout at `repository` in a process of its own. */
function throughputOnce(repository: string, extraArgs: readonly string[]): Promise<ThroughputFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', '--only=throughput', ...extraArgs],
      { cwd: path.join(repository, 'bench'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0)
        reject(new Error(`the bench in ${repository} exited with ${code}:\n${output.slice(-2000)}`));
      else {
        try {
          resolve(parseThroughputOutput(output));
        } catch (error) {
          reject(error);
        }
      }
    });
  });
}

function describe(figures: ThroughputFigures): string {
  return `${figures.runsPerSecond.toFixed(1)} runs/s, apply→running p50 ${figures.toRunningP50Ms} ms, CPU ${figures.cpuSeconds.toFixed(1)} s`;
}

export async function compareThroughputWithRef(
  ref: string,
  options: { rounds: number; extraArgs: readonly string[] },
): Promise<void> {
  const reference = referenceCheckout(ref);
  const sides = [
    { name: 'this checkout', repository: REPOSITORY, results: [] as ThroughputFigures[] },
    {
      name: `${ref} (${reference.commit.slice(0, 12)})`,
      repository: reference.directory,
      results: [] as ThroughputFigures[],
    },
  ];
  for (let round = 1; round <= options.rounds; round++) {
    const order = round % 2 === 1 ? sides : [...sides].reverse();
    for (const side of order) {
      const figures = await throughputOf(side.repository, options.extraArgs);
      side.results.push(figures);
      console.log(`  round ${round}, ${side.name}: ${describe(figures)}`);
    }
  }
  const median = (values: number[]) => summarise(values).medianMs;
  const [ours, theirs] = sides.map((side) => ({
    runsPerSecond: median(side.results.map((each) => each.runsPerSecond)),
    toRunningP50Ms: median(side.results.map((each) => each.toRunningP50Ms)),
    cpuSeconds: median(side.results.map((each) => each.cpuSeconds)),
  })) as [ThroughputFigures, ThroughputFigures];
  console.log(`  median of ${options.rounds}, this checkout: ${describe(ours)}`);
  console.log(`  median of ${options.rounds}, ${sides[1]?.name}: ${describe(theirs)}`);
  console.log(
    `  ratio (this checkout / reference): runs/s ×${(ours.runsPerSecond / theirs.runsPerSecond).toFixed(2)}, apply→running p50 ×${(ours.toRunningP50Ms / theirs.toRunningP50Ms).toFixed(2)}, CPU ×${(ours.cpuSeconds / theirs.cpuSeconds).toFixed(2)}`,
  );
}
