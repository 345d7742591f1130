/** The built `dstack` CLI, run in a child process as its user would run it. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DSTACK_BIN = fileURLToPath(new URL('../../cli/dist/bin/dstack.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();

/** Throws unless the CLI has been built (the e2e tests run the built CLI, not its sources). */
export function requireBuiltDstack(): void {
  if (!existsSync(DSTACK_BIN)) throw new Error(`${DSTACK_BIN} does not exist: build first (pnpm build)`);
}

/**
 * Runs `dstack …` in `cwd` and collects its output. The test's own project choice and CLI config
 * directory are not inherited: `env` says which configuration the CLI reads (HOME or
 * DSTACK_CLI_CONFIG_DIR).
 */
export function runDstack(
  args: readonly string[],
  { cwd, env = {} }: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const { DSTACK_PROJECT: _project, DSTACK_CLI_CONFIG_DIR: _dir, ...inherited } = process.env;
  const child = spawn(process.execPath, [DSTACK_BIN, ...args], {
    cwd,
    env: { ...inherited, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** A `dstack …` still running (`-w`, `-f`): its output so far, and its end. */
export interface RunningDstack {
  child: ChildProcess;
  output(): string;
  result: Promise<CliResult>;
}

/** Starts `dstack …` without waiting for it (a watch); end it with `child.kill('SIGINT')`, as Ctrl-C. */
export function startDstack(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): RunningDstack {
  const result = runDstack(args, options);
  const child = [...running].at(-1) as ChildProcess;
  let stdout = '';
  child.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
  });
  return { child, output: () => stdout, result };
}

/** Kills the CLIs a failed test left running (a stuck `apply` must not outlive the file). */
export function killRunningDstack(): void {
  for (const child of running) child.kill('SIGKILL');
}
