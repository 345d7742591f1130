/**
 * CLI startup: what a user waits for per command. The published `dstack` (the bundle its package's
 * `bin` names) runs `--version`, `--help`, `ps --help` and, against a local server (SQLite, the
 * local backend, in this process), `ps`, `offer`, `logs RUN` and `apply -f … -d`: each a fresh
 * process, measured for wall time, CPU time and peak RSS, in rounds that alternate every subject
 * with bare `node -e 0`, so that a loaded machine slows all of them alike (medians are shown).
 * dstack's own CLI is measured beside it when one is runnable: `DSTACK_REFERENCE_CLI` (a command,
 * e.g. `dstack` or `python3 -m dstack._internal.cli.main`), else Python's `dstack` package if
 * `python3` can import it.
 *
 * Targets (issue 37): `ps` at most 150 ms, at most 2.5x bare node, at most 70 MiB; `offer` and
 * `apply -d` within 2x of `ps`; the commands that reach no server within 2.5x bare node. Beside
 * them, bare node sending `ps`'s request (`runs/list`) and printing the answer: the part of `ps`'s
 * time that is node's and the server's, not the CLI's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasGnuTime, measureProcess, type ProcessUsage } from './process-usage.js';
import { BENCH_ADMIN_TOKEN, localBackendServer, waitForStatus, withServer } from './server-bench.js';
import { summarise } from './stats.js';

const CLI_PACKAGE = fileURLToPath(new URL('../../packages/cli/', import.meta.url));
const ROUNDS = 7;
const WARMUP_ROUNDS = 1;
const PS_TARGET_MS = 150;
const PS_TARGET_MIB = 70;
const TARGET_RATIO_TO_NODE = 2.5;
const TARGET_RATIO_TO_PS = 2;
const LOGS_RUN = 'bench-logs';

/** The bin a user gets: what the CLI package's `bin` names (its bundle). */
function publishedBin(): string {
  const manifest = JSON.parse(readFileSync(path.join(CLI_PACKAGE, 'package.json'), 'utf8')) as {
    bin: { dstack: string };
  };
  return path.join(CLI_PACKAGE, manifest.bin.dstack);
}

/** dstack's own CLI as a command line, or null when none is runnable here. */
function referenceCli(): string[] | null {
  const configured = process.env.DSTACK_REFERENCE_CLI?.trim();
  if (configured) return configured.split(/\s+/);
  const probe = spawnSync('python3', ['-c', 'import dstack._internal.cli.main'], { stdio: 'ignore' });
  return probe.status === 0 ? ['python3', '-m', 'dstack._internal.cli.main'] : null;
}

interface Subject {
  name: string;
  command: string;
  /** The arguments of one round (apply names each run apart). */
  args: (round: number) => string[];
  /** Runs that reach the server (the reference CLI runs these too). */
  server: boolean;
}

/**
 * `node -e` POSTing `runs/list` as `dstack ps` does and printing the answer: what a `ps` would cost
 * with no CLI at all (node, its http client and the server's answer), the floor under `dstack ps`.
 */
function bareRequestScript(url: string): string {
  const body = JSON.stringify({ project_name: 'main', only_active: true, limit: 100 });
  const headers = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' };
  return [
    `const request = require('node:http').request(${JSON.stringify(`${url}/api/runs/list`)},`,
    `  { method: 'POST', headers: ${JSON.stringify(headers)} },`,
    '  (response) => response.pipe(process.stdout));',
    `request.end(${JSON.stringify(body)});`,
  ].join('\n');
}

function subjects(bin: string, serverUrl: string): Subject[] {
  const dstack = (name: string, args: (round: number) => string[], server: boolean): Subject => ({
    name: `dstack ${name}`,
    command: process.execPath,
    args: (round) => [bin, ...args(round)],
    server,
  });
  return [
    { name: 'node -e 0 (bare node)', command: process.execPath, args: () => ['-e', '0'], server: false },
    {
      name: 'node POST runs/list (no CLI)',
      command: process.execPath,
      args: () => ['-e', bareRequestScript(serverUrl)],
      server: true,
    },
    dstack('--version', () => ['--version'], false),
    dstack('--help', () => ['--help'], false),
    dstack('ps --help', () => ['ps', '--help'], false),
    dstack('ps', () => ['ps'], true),
    dstack('offer', () => ['offer'], true),
    dstack(`logs ${LOGS_RUN}`, () => ['logs', LOGS_RUN], true),
    dstack('apply -f task.dstack.yml -d', (round) => applyArgs('ts', round), true),
  ];
}

function applyArgs(client: string, round: number): string[] {
  return ['apply', '-f', 'task.dstack.yml', '-d', '-y', '-n', `bench-apply-${client}-${round}`];
}

/** The reference CLI's subjects: the same server commands. */
function referenceSubjects(command: string[]): Subject[] {
  const [file, ...prefix] = command as [string, ...string[]];
  const reference = (name: string, args: (round: number) => string[]): Subject => ({
    name: `dstack's CLI ${name}`,
    command: file,
    args: (round) => [...prefix, ...args(round)],
    server: true,
  });
  return [
    reference('ps', () => ['ps']),
    reference('offer', () => ['offer']),
    reference(`logs ${LOGS_RUN}`, () => ['logs', LOGS_RUN]),
    reference('apply -f task.dstack.yml -d', (round) => applyArgs('py', round)),
  ];
}

/** A home with the CLI configuration pointing at `url`, and a directory with the configurations. */
function prepareClientFiles(url: string): { home: string; work: string } {
  const home = mkdtempSync(path.join(tmpdir(), 'dstack-bench-cli-'));
  mkdirSync(path.join(home, '.dstack'));
  writeFileSync(
    path.join(home, '.dstack', 'config.yml'),
    `projects:\n  - name: main\n    url: ${url}\n    token: ${BENCH_ADMIN_TOKEN}\n    default: true\n`,
  );
  const work = path.join(home, 'work');
  mkdirSync(work);
  writeFileSync(path.join(work, 'task.dstack.yml'), 'type: task\ncommands:\n  - "true"\n');
  writeFileSync(
    path.join(work, 'logs.dstack.yml'),
    'type: task\ncommands:\n  - for i in $(seq 1 100); do echo "log line $i"; done\n',
  );
  return { home, work };
}

function clientEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' };
  // dstack's CLI finds its Python packages where this process was told to.
  if (process.env.PYTHONPATH) env.PYTHONPATH = process.env.PYTHONPATH;
  return env;
}

interface Figures {
  subject: Subject;
  usage: ProcessUsage[];
}

function median(values: readonly number[]): number {
  return summarise(values).medianMs;
}

function status(checks: readonly boolean[]): string {
  if (checks.length === 0) return '-';
  return checks.every(Boolean) ? 'PASS' : 'MISS';
}

function report(figures: readonly Figures[], referenceFound: boolean): void {
  const bare = median(figures[0]!.usage.map((usage) => usage.wallMs));
  const ps = median(
    figures.find((figure) => figure.subject.name === 'dstack ps')!.usage.map((u) => u.wallMs),
  );
  const header = ['command', 'wall', 'wall p90', 'CPU', 'peak RSS', 'x node', 'target', 'status'];
  const lines = figures.map(({ subject, usage }) => {
    const wall = summarise(usage.map((u) => u.wallMs));
    const cpu = median(usage.map((u) => u.cpuMs));
    const rss = median(usage.map((u) => u.peakRssMiB));
    const ratio = wall.medianMs / bare;
    let target = '-';
    let checks: boolean[] = [];
    if (subject.name === 'dstack ps') {
      target = `<= ${PS_TARGET_MS} ms, ${TARGET_RATIO_TO_NODE}x node, ${PS_TARGET_MIB} MiB`;
      checks = [wall.medianMs <= PS_TARGET_MS, ratio <= TARGET_RATIO_TO_NODE, !(rss > PS_TARGET_MIB)];
    } else if (subject.name === 'dstack offer' || subject.name.startsWith('dstack apply')) {
      target = `<= ${TARGET_RATIO_TO_PS}x ps`;
      checks = [wall.medianMs <= TARGET_RATIO_TO_PS * ps];
    } else if (subject.name.startsWith('dstack') && !subject.server) {
      target = `<= ${TARGET_RATIO_TO_NODE}x node`;
      checks = [ratio <= TARGET_RATIO_TO_NODE];
    }
    return [
      subject.name,
      `${wall.medianMs.toFixed(0)} ms`,
      `${wall.p90Ms.toFixed(0)} ms`,
      Number.isNaN(cpu) ? 'n/a' : `${cpu.toFixed(0)} ms`,
      Number.isNaN(rss) ? 'n/a' : `${rss.toFixed(1)} MiB`,
      `${ratio.toFixed(2)}x`,
      target,
      status(checks),
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
  if (!hasGnuTime) console.log('CPU and peak RSS need GNU time (/usr/bin/time; Debian package `time`).');
  if (!referenceFound) {
    console.log(
      "dstack's own CLI: not found (set DSTACK_REFERENCE_CLI, or make python3 import dstack), so not measured.",
    );
  }
}

export async function benchmarkCliStartup(): Promise<void> {
  const bin = publishedBin();
  if (!existsSync(bin)) throw new Error(`${bin} does not exist: build first (pnpm build)`);
  const reference = referenceCli();
  await withServer(localBackendServer, async (server) => {
    const { home, work } = prepareClientFiles(server.url);
    try {
      const options = { env: clientEnvironment(home), cwd: work };
      // The run whose logs `dstack logs` prints, finished before the rounds.
      measureProcess(
        process.execPath,
        [bin, 'apply', '-f', 'logs.dstack.yml', '-d', '-y', '-n', LOGS_RUN],
        options,
      );
      await waitForStatus(server, LOGS_RUN, ['done'], performance.now());
      const all = [...subjects(bin, server.url), ...(reference ? referenceSubjects(reference) : [])];
      const figures: Figures[] = all.map((subject) => ({ subject, usage: [] }));
      for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
        for (const figure of figures) {
          const args = figure.subject.args(round);
          const usage = await measureProcess(figure.subject.command, args, options);
          if (round >= WARMUP_ROUNDS) figure.usage.push(usage);
          // An applied run takes the whole local host: the next one would find no offer (and
          // fail) while it runs. Between the measured processes, it runs to its end.
          if (figure.subject.name.includes('apply')) {
            await waitForStatus(server, args.at(-1)!, ['done'], performance.now());
          }
        }
      }
      console.log(
        `CLI startup: ${ROUNDS} rounds after ${WARMUP_ROUNDS} warm-up, each command a fresh process, against a local server (${bin})`,
      );
      report(figures, reference !== null);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
}
