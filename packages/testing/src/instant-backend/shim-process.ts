/**
 * The real `dstack-shim` command (process runtime) as a child process of this
 * one, for tests and benchmarks that want the shim's work off their event loop.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { SHIM_BIN_PATH } from '@dstack/shim';

/** How much of a shim's last output is kept, to be shown if it dies unexpectedly. */
const OUTPUT_TAIL_CHARS = 4000;

export interface ShimProcessOptions {
  /** The shim's home (`--home`): its state and its tasks' files. Created if missing. */
  homeDir: string;
  /** How long to wait for the shim to listen, and to exit when closed, in milliseconds. Default 30 000. */
  timeoutMs?: number;
}

export interface ShimProcess {
  readonly pid: number;
  /** The port the shim listens on (loopback). */
  readonly port: number;
  /** SIGTERM (the shim stops its tasks and exits), SIGKILL if it has not exited in time. Idempotent. */
  close(): Promise<void>;
}

export async function startShimProcess(options: ShimProcessOptions): Promise<ShimProcess> {
  if (!existsSync(SHIM_BIN_PATH)) {
    throw new Error(`${SHIM_BIN_PATH} is missing: build @dstack/shim first (pnpm build)`);
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  await mkdir(options.homeDir, { recursive: true });
  const child = spawn(
    process.execPath,
    [SHIM_BIN_PATH, '--http-port', '0', '--home', options.homeDir, '--runtime', 'process'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  const port = await new Promise<number>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => fail(`it did not listen within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`the shim did not start: ${why}\n${output}`));
    };
    child.once('error', (error) => fail(error.message));
    child.once('exit', (code, signal) => fail(`it exited (${signal ?? `exit status ${code}`})`));
    child.stderr.on('data', collect);
    child.stdout.on('data', collect);
    child.stdout.on('data', function awaitListening() {
      const listening = /listening on (\d+)/.exec(output);
      if (listening && !settled) {
        settled = true;
        clearTimeout(timer);
        child.stdout.off('data', awaitListening);
        resolve(Number(listening[1]));
      }
    });
  });
  // The start-up's whole output is not kept past the start: a long-lived shim prints a lot.
  child.stdout.off('data', collect);
  child.stderr.off('data', collect);
  // Keep draining its output, so that a chatty shim never blocks on a full pipe; its last lines
  // are kept, to say why if it dies under a test or a bench (a crash would otherwise be silent).
  let tail = '';
  const keepTail = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout.on('data', keepTail);
  child.stderr.on('data', keepTail);
  let closing: Promise<void> | undefined;
  child.once('exit', (code, signal) => {
    if (closing === undefined) {
      console.error(
        `[shim ${child.pid}] exited before it was closed (${signal ?? `exit status ${code}`}); its last output:\n${tail}`,
      );
    }
  });
  return {
    pid: child.pid as number,
    port,
    close() {
      closing ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const killTimer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(killTimer);
      })();
      return closing;
    },
  };
}
