/**
 * Wall time, CPU time and peak memory of one command run to its end. Node reports neither the CPU
 * time nor the peak RSS of a child, so the command runs under GNU time (`/usr/bin/time`, Debian's
 * `time` package), which writes them to a file; without it only the wall time is known.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const GNU_TIME = '/usr/bin/time';

export interface ProcessUsage {
  wallMs: number;
  /** User + system CPU; NaN without GNU time. */
  cpuMs: number;
  /** Peak resident set size; NaN without GNU time. */
  peakRssMiB: number;
}

export interface RunOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export const hasGnuTime: boolean = existsSync(GNU_TIME);

let scratch: string | undefined;

/** Where GNU time writes its report: a directory made on first use, removed when the process exits. */
function reportFile(): string {
  if (scratch === undefined) {
    const directory = mkdtempSync(path.join(tmpdir(), 'dstack-bench-usage-'));
    process.once('exit', () => rmSync(directory, { recursive: true, force: true }));
    scratch = directory;
  }
  return path.join(scratch, 'usage.txt');
}

/**
 * Runs `command args` to its end; throws with its output when it fails. Asynchronous: the server
 * the command talks to may live in this process.
 */
export async function measureProcess(
  command: string,
  args: readonly string[],
  options: RunOptions,
): Promise<ProcessUsage> {
  const report = reportFile();
  const [file, argv] = hasGnuTime
    ? [GNU_TIME, ['-f', '%U %S %M', '-o', report, command, ...args]]
    : [command, [...args]];
  const started = performance.now();
  const child = spawn(file, argv, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`${[command, ...args].join(' ')} exited with ${code}: ${output}`);
  if (!hasGnuTime) return { wallMs, cpuMs: Number.NaN, peakRssMiB: Number.NaN };
  // GNU time's last line holds the figures (a command killed by a signal adds one before them).
  const [user, system, maxKiB] = readFileSync(report, 'utf8')
    .trim()
    .split('\n')
    .at(-1)!
    .split(' ')
    .map(Number);
  return { wallMs, cpuMs: (user! + system!) * 1000, peakRssMiB: maxKiB! / 1024 };
}
