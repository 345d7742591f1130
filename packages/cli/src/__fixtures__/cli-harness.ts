/** Runs the built `dstack` bin as a child process with its own HOME, and cleans up after. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { saveCliConfig } from '../config/cli-config.js';

/** Each test spawns node several times; a loaded 2-core machine needs far more than vitest's 5 s. */
export const CLI_TEST_TIMEOUT_MS = 60_000;

export const BIN = fileURLToPath(new URL('../../dist/bin/dstack.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  child: ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  result: Promise<CliResult>;
}

export class CliHarness {
  readonly home: string;
  readonly #children = new Set<ChildProcess>();

  readonly #command: readonly string[];

  /**
   * `bin`: the script to run (default: the tsc build's `BIN`; the bundle users get is another);
   * `nodeArguments` go before it (e.g. `--import` of a loader hook).
   */
  constructor(options: { bin?: string; nodeArguments?: readonly string[] } = {}) {
    const bin = options.bin ?? BIN;
    if (!existsSync(bin)) throw new Error(`${bin} does not exist: build first (pnpm turbo run build)`);
    this.#command = [...(options.nodeArguments ?? []), bin];
    this.home = mkdtempSync(join(tmpdir(), 'dstack-cli-home-'));
  }

  get configPath(): string {
    return join(this.home, '.dstack', 'config.yml');
  }

  /** Writes a config with one default project `main` at `url`. */
  async useProject(url: string, token: string, name = 'main'): Promise<void> {
    await saveCliConfig({ projects: [{ name, url, token, default: true }] }, this.configPath);
  }

  /**
   * Starts the bin; with `stdin: 'pipe'` the test writes to `child.stdin` (default: no input);
   * `cwd` is its working directory (default: the test's).
   */
  start(
    args: readonly string[],
    environment: NodeJS.ProcessEnv = {},
    options: { stdin?: 'pipe' | 'ignore'; cwd?: string } = {},
  ): RunningCli {
    const { DSTACK_PROJECT: _project, DSTACK_CLI_CONFIG_DIR: _directory, ...inherited } = process.env;
    const child = spawn(process.execPath, [...this.#command, ...args], {
      env: { ...inherited, HOME: this.home, NO_COLOR: '1', ...environment },
      stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    this.#children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const result = new Promise<CliResult>((resolve) => {
      child.on('close', (code, signal) => {
        this.#children.delete(child);
        resolve({ code, signal, stdout, stderr });
      });
    });
    return { child, stdout: () => stdout, stderr: () => stderr, result };
  }

  run(
    args: readonly string[],
    environment: NodeJS.ProcessEnv = {},
    options: { cwd?: string } = {},
  ): Promise<CliResult> {
    return this.start(args, environment, options).result;
  }

  /** Kills any child still running and removes HOME. */
  cleanUp(): void {
    for (const child of this.#children) child.kill('SIGKILL');
    this.#children.clear();
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** Resolves when `condition` holds, polling; rejects after `timeoutMs` with `description`. */
export async function waitFor(
  condition: () => boolean,
  description: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
